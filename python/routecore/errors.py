"""Exception classes. Every routecore error derives from :class:`RoutecoreError`."""

from routecore._native import (
    BadKError,
    CorruptIndexError,
    DimensionMismatchError,
    DuplicateIdError,
    EmptyIndexError,
    InvalidArgumentError,
    ModelError,
    NonFiniteError,
    RoutecoreError,
    RuntimeUnavailableError,
    StorageIOError,
    UnknownIdError,
)


class ConfigError(RoutecoreError):
    """A routes/tools/router configuration is invalid (names the problem)."""


class DatasetError(RoutecoreError):
    """An evaluation dataset is missing or malformed (names file and line)."""


class DownloadError(RoutecoreError):
    """A model download failed or its checksum did not match."""


class MemoryStoreError(RoutecoreError):
    """The experience-memory database is locked or corrupt."""


class LLMError(RoutecoreError):
    """The LLM fallback router failed (unreachable, timeout, unparseable answer)."""


class UnknownRouteError(InvalidArgumentError):
    """A route name the router does not have (``Router.learn`` was told an unknown route)."""


__all__ = [
    "BadKError",
    "ConfigError",
    "CorruptIndexError",
    "DatasetError",
    "DimensionMismatchError",
    "DownloadError",
    "DuplicateIdError",
    "EmptyIndexError",
    "InvalidArgumentError",
    "LLMError",
    "MemoryStoreError",
    "ModelError",
    "NonFiniteError",
    "RoutecoreError",
    "RuntimeUnavailableError",
    "StorageIOError",
    "UnknownIdError",
    "UnknownRouteError",
]
