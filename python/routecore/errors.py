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


class MissingExtraError(RoutecoreError, ImportError):
    """An optional extra is not installed; the message names the ``pip install 'routecore[...]'`` that
    adds it (an :class:`ImportError` too)."""


def missing_extra(what: str, extra: str, detail: str = "") -> MissingExtraError:
    """The error for ``what`` needing the extra ``extra`` (``detail``: the import's own message)."""
    return MissingExtraError(f"{what}: pip install 'routecore[{extra}]'" + (f" ({detail})" if detail else ""))


class UnknownRouteError(InvalidArgumentError):
    """A route name the router does not have (``Router.learn`` was told an unknown route)."""


class UnknownKeyError(InvalidArgumentError, KeyError):
    """A name a result or a setting read by key does not have (a :class:`KeyError` too)."""

    def __str__(self) -> str:  # the message as written, not quoted as KeyError quotes its key
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class UnknownLayerError(UnknownKeyError):
    """A context layer a :class:`~routecore.routers.context_result.Context` does not have (a
    :class:`KeyError` too)."""


class UnknownOptionError(ConfigError, TypeError):
    """A keyword a settings class does not take, e.g. ``Policy(hgh=0.9)`` (a :class:`TypeError` too)."""


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
    "MissingExtraError",
    "ModelError",
    "NonFiniteError",
    "RoutecoreError",
    "RuntimeUnavailableError",
    "StorageIOError",
    "UnknownIdError",
    "UnknownKeyError",
    "UnknownLayerError",
    "UnknownOptionError",
    "UnknownRouteError",
]
