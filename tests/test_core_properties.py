"""Property tests: random valid events encode exactly like the reference and round-trip."""

from hypothesis import given, settings, HealthCheck

from ag_ui.encoder import EventEncoder as RefEncoder

from agui_fast.decoder import decode_event
from agui_fast.encoder import EventEncoder
from agui_fast.interop import from_ag_ui, to_ag_ui

from conftest import examples
from strategies import events

ENC = EventEncoder()
REF = RefEncoder()

SETTINGS = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(events)
def test_encoding_matches_the_python_reference(event):
    assert ENC.encode(event) == REF.encode(to_ag_ui(event))


@SETTINGS
@given(events)
def test_sse_payload_round_trips(event):
    text = ENC.encode(event)
    assert text.startswith("data: ") and text.endswith("\n\n")
    assert decode_event(text[6:-2]) == event


@SETTINGS
@given(events)
def test_interop_round_trips(event):
    assert from_ag_ui(to_ag_ui(event)) == event


from hypothesis import strategies as st

from agui_fast.errors import DecodeError
from strategies import json_values


@SETTINGS
@given(st.binary(max_size=200) | st.text(max_size=200).map(lambda s: s.encode("utf-8", "surrogatepass")))
def test_garbage_raises_only_our_errors(data):
    try:
        decode_event(data)
    except DecodeError:
        pass


@SETTINGS
@given(st.dictionaries(st.sampled_from(["type", "messageId", "delta", "messages", "outcome", "x"]),
                       json_values | st.sampled_from(["TEXT_MESSAGE_CONTENT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]),
                       max_size=5))
def test_random_objects_raise_only_our_errors(obj):
    import json

    for data in (obj, json.dumps(obj)):
        try:
            decode_event(data)
        except DecodeError:
            pass
