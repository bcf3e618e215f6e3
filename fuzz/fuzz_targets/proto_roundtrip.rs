//! Differential round trips of the protobuf JSON mapping (`agui_core::proto`). Input: JSON
//! event text (when it starts with `{`) or one unframed `Event` message. Checks: no panic,
//! only the codec's error kinds (JSON in: `InvalidJson` / `Encode`; message in: `Decode` /
//! `UnknownEventType`); the decoder's fast path for flat events and its general path
//! (`decode_with_prost`) write the same bytes or fail the same way; what the decoder writes
//! is valid JSON that the encoder accepts or refuses as `Encode`; the encoder's bytes are a fixed point
//! (encode . decode gives them back), whether they came from JSON input or a decoded
//! message.
#![no_main]
mod budget; // the allocation budget (the global allocator)
use agui_core::limits::{self, DEFAULT_MAX_DEPTH};
use agui_core::proto::decode::decode_with_prost;
use agui_core::proto::{decode_message_as, encode_json, Error, Format};
use libfuzzer_sys::fuzz_target;

/// Decode one message to JSON text, checking the two decoder paths against each other.
fn decode(msg: &[u8]) -> Result<Vec<u8>, Error> {
    let (mut w1, mut w2) = (Vec::new(), Vec::new());
    let (mut fast, mut general) = (Vec::new(), Vec::new());
    let r = decode_message_as(msg, &mut w1, &mut fast, Format::Json);
    let r2 = decode_with_prost(msg, &mut w2, &mut general, Format::Json);
    assert_eq!(r, r2, "fast and general decoder paths disagree");
    assert_eq!(w1, w2);
    if r.is_ok() {
        assert_eq!(String::from_utf8_lossy(&fast), String::from_utf8_lossy(&general));
        limits::parse_value(&fast, DEFAULT_MAX_DEPTH + 16)
            .unwrap_or_else(|e| panic!("decoder wrote bad JSON ({e}): {}", String::from_utf8_lossy(&fast)));
    }
    r.map(|_| fast)
}

fn encode(json: &[u8]) -> Result<Vec<u8>, Error> {
    let mut msg = Vec::new();
    encode_json(json, false, &mut msg).map(|_| msg)
}

/// A decoded event encodes (or is refused as an `Encode` error), and from there the mapping is stable: the encoder's bytes
/// decode, and encoding that again gives the same bytes. (Decoding does not validate, like
/// the reference, and the encoder keeps only what the 1.0 schema has, so the first round
/// may drop members of an event outside the schema: `interruptIds` of an outcome that is
/// not `suspended`, say.)
fn round_trip(decoded: &[u8]) {
    let msg = match encode(decoded) {
        Ok(msg) => msg,
        // What the schema has no name for (a patch op enum value 8, written as "8") is
        // refused as the reference's encoder refuses it.
        Err(Error::Encode(_)) => return,
        Err(e) => panic!("unexpected encoder error kind {e:?}"),
    };
    let again = decode(&msg).unwrap_or_else(|e| panic!("re-encoded event does not decode ({e})"));
    let msg2 = encode(&again).expect("the encoder refuses its own decoded output");
    assert_eq!(msg, msg2, "encode . decode changed the encoder's bytes: {}", String::from_utf8_lossy(&again));
}

fuzz_target!(|data: &[u8]| {
    if data.first() == Some(&b'{') {
        match encode(data) {
            Ok(msg) if msg.is_empty() => {} // an unknown `type`: no arm, as the reference writes it
            Ok(msg) => match decode(&msg) {
                Ok(decoded) => round_trip(&decoded),
                // Like @ag-ui/proto, the encoder writes events the schema rejects as they are
                // (an assistant message with content parts, a timestamp beyond 2^53), and
                // the decoder refuses some of them: a decode error, never another kind.
                Err(Error::Decode(_)) => {}
                Err(e) => panic!("unexpected decoder error kind {e:?}"),
            },
            Err(Error::InvalidJson(_) | Error::Encode(_)) => {}
            Err(e) => panic!("unexpected encoder error kind {e:?}"),
        }
    } else {
        match decode(data) {
            Ok(decoded) => round_trip(&decoded),
            Err(Error::Decode(_) | Error::UnknownEventType) => {}
            Err(e) => panic!("unexpected decoder error kind {e:?}"),
        }
    }
});
