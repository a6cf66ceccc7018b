"""Both transports name the same error for the same bad envelope.

HTTP checks the body itself (``check_envelope``); over stdio the SDK's reader makes an item
of each line first, and the relay refuses what HTTP would (``stdio.refusal``): from the
reader's failure (``classify``), or from the raw line the reader took. For any line, both
agree on whether it is a message and, if not, on the error.
"""

from __future__ import annotations

import json

import mcp_types
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from memory_bank.mcp.envelope import REPEATED_KEY, EnvelopeError, check_envelope
from memory_bank.mcp.stdio import refusal

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)
messages = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "method": st.text(min_size=1, max_size=12)},
    optional={"id": st.integers() | st.text(max_size=8), "params": st.dictionaries(st.text(max_size=8), json_values, max_size=3)},
)
lines = (json_values | messages | st.lists(messages, min_size=1, max_size=2)).map(json.dumps) | st.text(max_size=40)


@given(line=lines.filter(lambda line: "\n" not in line))
def test_http_and_stdio_agree_on_every_line(line: str) -> None:
    item: SessionMessage | Exception
    try:  # what the SDK's stdio reader makes of the line
        item = SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValidationError as failure:
        item = failure
    stdio = refusal(item, line)
    try:
        check_envelope(line.encode())
    except EnvelopeError as error:
        assert stdio is not None and (stdio.code, stdio.message) == (error.code, error.message)
    else:
        assert stdio is None


@pytest.mark.parametrize("line", ['{"jsonrpc": "2.0", "id": 1, "method": "ping"}', '{"jsonrpc": "2.0", "id": 1, "result": {}}'])
def test_a_message_passes(line: str) -> None:
    check_envelope(line.encode())


@pytest.mark.parametrize(
    "line",
    [
        (
            '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "execute_capability", '
            '"arguments": {"name": "postMemory", "body": {"content": "a fact", "content": "another"}}}}'
        ),
        '{"jsonrpc": "2.0", "id": 1, "method": "ping", "method": "tools/list"}',
        '{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "ping"}',
    ],
)
def test_a_key_given_twice_is_an_invalid_request_as_rest_refuses_it(line: str) -> None:
    """The SDK keeps the later member, a proxy or a log may read the first; REST and the import
    refuse such a body (``uniqueKeys``), so HTTP does too (and stdio: ``test_mcp_stdio``)."""
    with pytest.raises(EnvelopeError) as refused:
        check_envelope(line.encode())
    assert (refused.value.code, refused.value.message) == (-32600, REPEATED_KEY)
