"""pyweb.protocol: HTTP/1.1 without I/O (RFC 9110, RFC 9112).

Bytes go in, messages come out (``messages.py``); responses are framed into bytes. Nothing here touches a
socket or imports trio, so the same code runs in the server, in a notebook cell and under
hypothesis. See docs/protocol.md.
"""

from .errors import (
    BadRequest,
    BodyTooLarge,
    HeadersTooLarge,
    NotImplementedByServer,
    ProtocolError,
    TargetTooLong,
    VersionNotSupported,
)
from .headers import Headers
from .messages import NEED_DATA, ConnectionClosed, Data, EndOfMessage, Message, Request
from .parser import Limits, RequestParser
from .response import (
    CONTINUE_100,
    LAST_CHUNK,
    Body,
    FileBody,
    Response,
    ResponseHead,
    encode_chunk,
    frame_response,
    http_date,
)

__all__ = [
    "BadRequest", "Body", "BodyTooLarge", "CONTINUE_100", "ConnectionClosed", "Data",
    "EndOfMessage", "FileBody", "Headers", "HeadersTooLarge", "LAST_CHUNK", "Limits", "Message",
    "NEED_DATA", "NotImplementedByServer", "ProtocolError", "Request", "RequestParser",
    "Response", "ResponseHead", "TargetTooLong", "VersionNotSupported", "encode_chunk",
    "frame_response", "http_date",
]
