"""permessage-deflate (RFC 7692), sans-IO: the negotiation, and wsproto connections that talk
through :class:`pyweb.protocol.websocket_deflate.Deflate` (compressed both ways, a bomb
stopped at ``max_message``)."""

from __future__ import annotations

import tracemalloc
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from wsproto.connection import Connection, ConnectionType
from wsproto.events import BytesMessage, CloseConnection, TextMessage
from wsproto.extensions import Extension, PerMessageDeflate
from wsproto.frame_protocol import FrameProtocol, Opcode, RsvBits

from pyweb.protocol.websocket import WebSocketOptions
from pyweb.protocol.websocket_deflate import Deflate, negotiate, parse_offers, server_deflate


def answer(header: str | None, window: int = 15, no_context: bool = False) -> str | None:
    params = negotiate(header, window, no_context)
    return None if params is None else params.header()


# --- the negotiation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "offer, window, no_context, expected",
    [
        ("permessage-deflate", 15, False, "permessage-deflate"),
        ("PerMessage-Deflate", 15, False, "permessage-deflate"),
        # the client lets the server choose its window: the server's limit
        ("permessage-deflate; client_max_window_bits", 12,
         False, "permessage-deflate; client_max_window_bits=12"),
        ("permessage-deflate; client_max_window_bits=10", 12,
         False, "permessage-deflate; client_max_window_bits=10"),
        ('permessage-deflate; client_max_window_bits="11"', 15,
         False, "permessage-deflate; client_max_window_bits=11"),
        # the client limits the server's window: the smaller of the two
        ("permessage-deflate; server_max_window_bits=10", 12,
         False, "permessage-deflate; server_max_window_bits=10"),
        ("permessage-deflate; server_max_window_bits=15", 12,
         False, "permessage-deflate; server_max_window_bits=12"),
        ("permessage-deflate; server_no_context_takeover", 15,
         False, "permessage-deflate; server_no_context_takeover"),
        ("permessage-deflate; client_no_context_takeover", 15, False, "permessage-deflate"),
        # the site wants no state between messages: both directions
        ("permessage-deflate; client_max_window_bits", 9, True,
         "permessage-deflate; client_max_window_bits=9; server_no_context_takeover; "
         "client_no_context_takeover"),
        # other extensions are skipped; the first acceptable offer wins
        ("x-webkit-deflate-frame, permessage-deflate; server_no_context_takeover,"
         " permessage-deflate", 15, False, "permessage-deflate; server_no_context_takeover"),
    ],
)  # fmt: skip
def test_accepted_offers(offer, window, no_context, expected):
    assert answer(offer, window, no_context) == expected


@pytest.mark.parametrize(
    "bad",
    [
        "permessage-deflate; unknown_parameter",
        "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
        "permessage-deflate; server_max_window_bits",  # needs a value
        "permessage-deflate; server_max_window_bits=16",
        "permessage-deflate; server_max_window_bits=7",
        "permessage-deflate; server_max_window_bits=010",  # no leading zeros
        "permessage-deflate; server_max_window_bits=ten",
        "permessage-deflate; client_max_window_bits=99",
        "permessage-deflate; client_no_context_takeover=1",  # takes no value
        # zlib cannot deflate with 256 bytes of window: declined, not answered with 9
        "permessage-deflate; server_max_window_bits=8",
    ],
)
def test_bad_offers_are_declined_and_the_next_one_taken(bad):
    assert answer(bad) is None
    assert answer(f"{bad}, permessage-deflate; client_max_window_bits") == (
        "permessage-deflate; client_max_window_bits=15"
    )


def test_no_offer_no_compression():
    assert negotiate(None) is None
    assert negotiate("") is None
    assert negotiate("x-webkit-deflate-frame") is None
    assert parse_offers("a, permessage-deflate; b=1; c") == [[("b", "1"), ("c", None)]]


@given(st.text(max_size=80))
def test_negotiate_never_raises(header):
    params = negotiate(header, 12)
    assert params is None or 9 <= params.server_window <= 12


def test_the_url_options_decide():
    offer = "permessage-deflate; client_max_window_bits"
    assert server_deflate(offer, WebSocketOptions(compression=False)) is None
    assert server_deflate("x-other", WebSocketOptions()) is None
    deflate = server_deflate(offer, WebSocketOptions(max_message=5000))
    assert deflate is not None and deflate.max_message == 5000
    assert deflate.params.header() == "permessage-deflate; client_max_window_bits=12"
    lean = server_deflate(
        offer, WebSocketOptions(compression_window_bits=10, compression_no_context_takeover=True)
    )
    assert lean is not None and lean.params.header() == (
        "permessage-deflate; client_max_window_bits=10; server_no_context_takeover; "
        "client_no_context_takeover"
    )


def test_options_name_the_bad_value():
    with pytest.raises(ValueError, match="compression_window_bits.*8"):
        WebSocketOptions(compression_window_bits=8)
    with pytest.raises(ValueError, match="max_fragments.*0"):
        WebSocketOptions(max_fragments=0)


# --- connections through the extension --------------------------------------------------------


def pair(
    offer: str, max_message: int = 1 << 20, window: int = 15, no_context: bool = False
) -> tuple[Connection, Connection]:
    """A wsproto client that offered ``offer`` and a server that answered with pyweb's
    negotiation, as after a real handshake."""
    params = negotiate(offer, window, no_context)
    assert params is not None
    client_ext = PerMessageDeflate()
    client_ext.finalize(params.header())  # what a client does with the 101's header
    client = Connection(ConnectionType.CLIENT, extensions=[client_ext])
    server = Connection(ConnectionType.SERVER, extensions=[Deflate(params, max_message)])
    return client, server


def deliver(sender: Connection, receiver: Connection, event) -> tuple[bytes, list]:
    wire = sender.send(event)
    receiver.receive_data(wire)
    return wire, list(receiver.events())


OFFERS = [
    "permessage-deflate",
    "permessage-deflate; client_max_window_bits",
    "permessage-deflate; server_max_window_bits=9; client_max_window_bits=9",
    "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
]


@pytest.mark.parametrize("offer", OFFERS)
@pytest.mark.parametrize("no_context", [False, True])
def test_messages_go_compressed_both_ways(offer, no_context):
    client, server = pair(offer, window=10, no_context=no_context)
    text = "the same words again and again, " * 200
    for _ in range(3):  # several messages: the kept (or dropped) context must agree
        wire, got = deliver(client, server, TextMessage(data=text))
        assert wire[0] & 0x40 and len(wire) < len(text) // 10  # RSV1: compressed
        assert [e.data for e in got] == [text]
        wire, got = deliver(server, client, BytesMessage(data=text.encode()))
        assert wire[0] & 0x40 and len(wire) < len(text) // 10
        assert b"".join(e.data for e in got) == text.encode()


@given(st.lists(st.binary(max_size=3000), min_size=1, max_size=5), st.sampled_from(OFFERS))
def test_any_messages_come_back_unchanged(messages, offer):
    client, server = pair(offer, window=9)
    for message in messages:
        _, got = deliver(client, server, BytesMessage(data=message))
        assert b"".join(e.data for e in got) == message
        _, got = deliver(server, client, BytesMessage(data=message))
        assert b"".join(e.data for e in got) == message


class Precompressed(Extension):
    """A client side that sends a payload deflated beforehand as it is, with RSV1 set: how a
    bomb is made without holding its inflated size."""

    name = "permessage-deflate"

    def enabled(self) -> bool:
        return True

    def offer(self) -> bool | str:
        return True

    def frame_outbound(self, proto, opcode, rsv, data, fin):
        first = opcode is not Opcode.CONTINUATION
        return RsvBits(first, rsv[1], rsv[2]), data


def bomb(inflated_mib: int) -> bytes:
    """A permessage-deflate payload of ``inflated_mib`` MiB of zeros (about 1 KiB a MiB)."""
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = bytes(1 << 20)
    payload = b"".join(deflater.compress(zeros) for _ in range(inflated_mib))
    return (payload + deflater.flush(zlib.Z_SYNC_FLUSH))[:-4]


def bomb_frame(inflated_mib: int) -> bytes:
    return FrameProtocol(client=True, extensions=[Precompressed()]).send_data(
        bomb(inflated_mib), fin=True
    )


def test_a_bomb_is_stopped_at_max_message_without_being_inflated():
    _, server = pair("permessage-deflate", max_message=1 << 20)
    frame = bomb_frame(32)  # 32 MiB of zeros in about 32 KiB
    assert len(frame) < 64 << 10
    tracemalloc.start()
    try:
        server.receive_data(frame)
        events = list(server.events())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [(type(e), e.code) for e in events if isinstance(e, CloseConnection)] == [
        (CloseConnection, 1009)
    ]
    assert sum(len(e.data) for e in events if isinstance(e, BytesMessage)) <= 1 << 20
    assert peak < 4 << 20, f"{peak} bytes held for a 1 MiB limit"


def test_a_message_of_exactly_max_message_inflated_passes():
    _, server = pair("permessage-deflate", max_message=2 << 20)
    server.receive_data(bomb_frame(2))
    got = list(server.events())
    assert sum(len(e.data) for e in got if isinstance(e, BytesMessage)) == 2 << 20
    assert not any(isinstance(e, CloseConnection) for e in got)
    server.receive_data(bomb_frame(2))  # the count starts again with each message
    assert not any(isinstance(e, CloseConnection) for e in server.events())
