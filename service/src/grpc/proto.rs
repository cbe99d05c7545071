//! The generated gRPC types, client and server of `proto/sheetd/v1/sheetd.proto` (package
//! `sheetd.v1`), their serde implementations (the canonical protobuf JSON mapping), and the encoded file descriptor set served by reflection.

#![allow(clippy::all, clippy::pedantic, missing_docs)]

tonic::include_proto!("sheetd.v1");
include!(concat!(env!("OUT_DIR"), "/sheetd.v1.serde.rs"));

/// The encoded `FileDescriptorSet` of the API, for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("sheetd_descriptor");

/// `sheetd.v1.ApplyResponse` is written by hand (see [`crate::grpc::apply_response`]).
pub use crate::grpc::apply_response::ApplyResponse;
/// `sheetd.v1.BatchValues` is written by hand (see [`crate::grpc::batch_values`]).
pub use crate::grpc::batch_values::BatchValues;
