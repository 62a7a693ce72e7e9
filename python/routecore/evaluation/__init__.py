"""Evaluation and calibration of routers on labelled datasets."""
