"""The tracer's logger (stdlib ``logging``; importing the package configures nothing)."""

from __future__ import annotations

import logging
import sys

logger = logging.getLogger("smartcomment")
logger.addHandler(logging.NullHandler())


def setup_logger(
    level: str | int = "WARNING",
    filepath: str | None = None,
    *,
    rotation: int | None = None,
    retention: int | None = None,
    compression: object = None,
    format: str | None = None,  # noqa: A002 - keyword name of smartcomment 0.1.2
    colorize: bool | None = None,
) -> logging.Logger:
    """Reset the ``smartcomment`` logger's handlers to stderr (and a file if given).

    Args:
        level: Logging level name or number.
        filepath: Optional log file; with ``rotation`` (bytes) it rotates, keeping
            ``retention`` backups.
        rotation: Maximum file size in bytes before rotating.
        retention: Number of rotated files kept.
        compression: Accepted for compatibility; ignored.
        format: A ``logging`` format string.
        colorize: Accepted for compatibility; ignored.
    """
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    formatter = logging.Formatter(format or "%(asctime)s | %(levelname)s | %(name)s - %(message)s")
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if filepath:
        if rotation:
            from logging.handlers import RotatingFileHandler

            handlers.append(RotatingFileHandler(filepath, maxBytes=rotation, backupCount=retention or 0))
        else:
            handlers.append(logging.FileHandler(filepath))
    for handler in handlers:
        handler.setFormatter(formatter)
        logger.addHandler(handler)
    logger.setLevel(level if isinstance(level, int) else level.upper())
    return logger
