//! The codec of the generated service and client: prost's, except that
//! - a request that is not valid protobuf is INVALID_ARGUMENT (the client sent it wrong) instead
//!   of tonic's INTERNAL;
//! - a message is encoded into a plain byte vector first, then copied into tonic's buffer;
//! - a message is decoded from its bytes as one slice, not through tonic's buffer.
//!
//! Wired in by `build.rs` (`codec_path`). Buffer settings are prost's.
//!
//! Why the vector: prost writes a varint or a field key a byte at a time through `BufMut`.
//! Into tonic's buffer each byte is a call through two layers, each with its own checks; into a
//! `Vec<u8>` it is a push. The vector is also written without measuring the whole message
//! first (it grows as it must), which saves one pass over every nested message. Encoding an
//! Apply's reply (a dozen changes, each two values deep) went from about 25,000 instructions
//! to 16,000 (callgrind; `docs/api.md`, Performance).

use prost::Message;
use prost::bytes::{Buf, BufMut};
use std::marker::PhantomData;
use tonic::Code;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic_prost::{ProstCodec, ProstDecoder};

/// prost's codec with malformed messages answered INVALID_ARGUMENT.
#[derive(Debug, Clone)]
pub struct SheetdCodec<T, U> {
    _pd: PhantomData<(T, U)>,
}

impl<T, U> Default for SheetdCodec<T, U> {
    fn default() -> Self {
        SheetdCodec { _pd: PhantomData }
    }
}

impl<T, U> Codec for SheetdCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = VecEncoder<T>;
    type Decoder = CheckedDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        VecEncoder { scratch: Vec::new(), _pd: PhantomData }
    }

    fn decoder(&mut self) -> Self::Decoder {
        CheckedDecoder { inner: ProstCodec::<T, U>::raw_decoder(BufferSettings::default()) }
    }
}

/// Encodes each message into a vector it keeps (see the module docs), then into tonic's buffer.
#[derive(Debug)]
pub struct VecEncoder<T> {
    scratch: Vec<u8>,
    _pd: PhantomData<T>,
}

impl<T: Message> Encoder for VecEncoder<T> {
    type Item = T;
    type Error = tonic::Status;

    fn encode(&mut self, item: T, buf: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        self.scratch.clear();
        // A `Vec` takes any length (it grows), so nothing needs measuring first.
        item.encode_raw(&mut self.scratch);
        buf.put_slice(&self.scratch);
        // A stream of large messages does not keep the largest one's room for good.
        if self.scratch.capacity() > 1 << 20 {
            self.scratch = Vec::new();
        }
        Ok(())
    }

    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings::default()
    }
}

/// prost's decoder; its errors become INVALID_ARGUMENT with the standard details.
#[derive(Debug)]
pub struct CheckedDecoder<U> {
    inner: ProstDecoder<U>,
}

impl<U: Message + Default> Decoder for CheckedDecoder<U> {
    type Item = U;
    type Error = tonic::Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, tonic::Status> {
        // A message is one contiguous piece of tonic's buffer (always, as tonic 0.14 buffers
        // it): decoded from a plain slice, each field is a re-slice instead of a call through
        // the buffer's checks (the SolveBatch server's decoding: see docs/api.md).
        let n = buf.remaining();
        if buf.chunk().len() == n {
            let item = U::decode(buf.chunk()).map_err(|e| malformed(&e.to_string()))?;
            buf.advance(n);
            return Ok(Some(item));
        }
        self.inner.decode(buf).map_err(|e| malformed(e.message()))
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.inner.buffer_settings()
    }
}

/// A request that is not valid protobuf: INVALID_ARGUMENT with the standard details.
fn malformed(why: &str) -> tonic::Status {
    super::status::plain(
        Code::InvalidArgument,
        crate::problem::Code::Malformed.as_str(),
        format!("the message is not valid protobuf for this call: {why}"),
    )
}
