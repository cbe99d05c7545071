//! The codec of the generated service and client: prost's, except that a request that is not
//! valid protobuf is INVALID_ARGUMENT (the client sent it wrong) instead of tonic's INTERNAL.
//!
//! Wired in by `build.rs` (`codec_path`). Only the decoding error changes; encoding and buffer
//! handling are prost's.

use prost::Message;
use std::marker::PhantomData;
use tonic::Code;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

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
    type Encoder = ProstEncoder<T>;
    type Decoder = CheckedDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::raw_encoder(BufferSettings::default())
    }

    fn decoder(&mut self) -> Self::Decoder {
        CheckedDecoder { inner: ProstCodec::<T, U>::raw_decoder(BufferSettings::default()) }
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
        self.inner.decode(buf).map_err(|e| {
            super::status::plain(
                Code::InvalidArgument,
                crate::problem::Code::Malformed.as_str(),
                format!("the message is not valid protobuf for this call: {}", e.message()),
            )
        })
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.inner.buffer_settings()
    }
}
