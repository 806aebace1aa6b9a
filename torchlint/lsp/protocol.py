"""JSON-RPC as the server speaks it: every request gets a result or an error response.

pygls drops a message whose parameters do not fit the method's types (it logs the error
and answers nothing, so the client waits forever), and answers a handler's exception with
the whole traceback as the error's message. Here a request with invalid parameters gets
an ``InvalidParams`` error saying what is wrong, a notification with invalid parameters
is reported to the user (it cannot be answered), a handler's exception becomes an
``InternalError`` naming the exception (tracebacks go to the server's log, stderr), and a
request after ``shutdown`` an ``InvalidRequest`` error.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Any

from cattrs.errors import ClassValidationError
from cattrs.v import transform_error
from lsprotocol import types
from lsprotocol.types import EXIT
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
)
from pygls.protocol import LanguageServerProtocol

logger = logging.getLogger(__name__)

_ANSWERED = object()  # a message already answered (or reported) while it was read
_MAX_PROBLEMS = 3


def _problems(exc: BaseException) -> str:
    """What is wrong with the parameters, as cattrs words it (``$.textDocument.uri``)."""
    cause = exc.__cause__
    if isinstance(cause, ClassValidationError):
        found = [line.replace("$.params", "params") for line in transform_error(cause)]
        more = len(found) - _MAX_PROBLEMS
        return "; ".join(found[:_MAX_PROBLEMS]) + (f" (and {more} more)" if more > 0 else "")
    return str(cause or exc)


class TorchlintProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            method = data.get("method")
            if not isinstance(method, str):
                raise
            what = f"invalid params for {method}: {_problems(exc)}"
            if "id" in data:
                error = JsonRpcInvalidParams(what) if isinstance(
                    exc, JsonRpcInvalidParams) else JsonRpcInternalError(what)
                self._send_response(data["id"], error=error.to_response_error())
            else:  # a notification cannot be answered: say it was ignored
                self._server.report_problem(f"torchlint: ignored a notification with {what}",
                                            types.MessageType.Warning)
            return _ANSWERED

    def handle_message(self, message: Any) -> None:
        if message is _ANSWERED:
            return
        method, ident = getattr(message, "method", None), getattr(message, "id", None)
        if self._shutdown and method not in (None, EXIT) and ident is not None:
            # pygls drops it: answer, as the protocol asks, that it comes too late
            self._send_response(ident, error=JsonRpcInvalidRequest(
                f"{method}: the server is shutting down").to_response_error())
            return
        super().handle_message(message)

    def _check_handler_result(self, future: Future[Any]) -> None:
        """A notification handler's failure: its traceback to the log, one line to the
        user (:meth:`TorchlintServer.report_server_error`)."""
        if not future.cancelled() and future.exception() is not None:
            logger.error("a notification handler failed", exc_info=future.exception())
        super()._check_handler_result(future)

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        exception = None if future.cancelled() else future.exception()
        if exception is None or isinstance(exception, JsonRpcException):
            super()._send_handler_result(future, msg_id=msg_id)
            return
        self._request_futures.pop(msg_id, None)
        logger.error("request %s failed", msg_id, exc_info=exception)
        error = JsonRpcInternalError(
            f"torchlint: {type(exception).__name__}: {exception} (the traceback is in the "
            "server's log)")
        self._send_response(msg_id, error=error.to_response_error())
