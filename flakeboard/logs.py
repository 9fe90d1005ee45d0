"""LOG_LEVEL: the board's logging (the settings' ``LOGGING``), to standard error.

Django logs a request it refused with a 4xx (a page denied, a bad request) together with
the exception that refused it, some fifteen lines of traceback a request. A refusal is the
client's mistake, or a probe, and its line (status, method and path) says all an operator
needs; a board facing the internet would write a traceback for each. So a 4xx is logged as
its line alone, and a server error (5xx) keeps its traceback.
"""

import logging


class RefusalsWithoutTraceback(logging.Filter):
    """A record of a response with a 4xx status loses its traceback; any other passes whole."""

    def filter(self, record: logging.LogRecord) -> bool:
        if 400 <= getattr(record, "status_code", 0) < 500:
            record.exc_info = record.exc_text = None
        return True


def logging_config(level: str) -> dict:
    """The LOGGING setting: every logger to standard error from ``level`` up (the level is
    the handler's too: Django's own loggers log from INFO up and propagate)."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        # The console's filter, not a logger's: it sees what every logger propagates, Django's
        # security loggers' (a bad Host, a form too large) with the responses' own.
        "filters": {"refusals": {"()": RefusalsWithoutTraceback}},
        "handlers": {"console": {"class": "logging.StreamHandler", "level": level,
                                 "filters": ["refusals"]}},
        "root": {"handlers": ["console"], "level": level},
    }
