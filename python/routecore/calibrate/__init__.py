"""Where a threshold comes from: calibration to the encoder in use, the fits, held-out scores, languages,
the linear and exemplar heads and the shipped priors.
"""
