//! Compiles `proto/sheetd/v1/sheetd.proto` with protox (pure Rust: no system `protoc`), generates
//! the tonic client and server, and writes the file descriptor set that server reflection serves.
//! Also records the commit built (`SHEETD_COMMIT`, for `sheetd --version`).

use prost::Message;
use std::path::PathBuf;

/// The commit the source is at (`git rev-parse --short=12 HEAD`), or `unknown` outside a git
/// work tree (a source archive).
fn commit() -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_owned())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Built again when HEAD moves: a checkout changes HEAD, a commit the branch it names.
    let git = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.git");
    let head = std::fs::read_to_string(git.join("HEAD")).unwrap_or_default();
    let branch = head.trim().strip_prefix("ref: ").map(|r| git.join(r));
    for f in [Some(git.join("HEAD")), branch, Some(git.join("packed-refs"))].into_iter().flatten() {
        if f.exists() {
            println!("cargo:rerun-if-changed={}", f.display());
        }
    }
    println!("cargo:rustc-env=SHEETD_COMMIT={}", commit());
    let proto_root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("proto");
    let file = proto_root.join("sheetd/v1/sheetd.proto");
    println!("cargo:rerun-if-changed={}", file.display());
    let fds = protox::compile([&file], [&proto_root])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let bytes = fds.encode_to_vec();
    std::fs::write(out.join("sheetd_descriptor.bin"), &bytes)?;
    // Malformed requests are INVALID_ARGUMENT: the generated code uses sheetd's codec.
    // A SolveBatch reply's values and an Apply's changes are encoded by hand, once (see
    // `grpc/batch_values.rs` and `grpc/apply_response.rs`).
    let batch_values = (".sheetd.v1.BatchValues", "crate::grpc::batch_values::BatchValues");
    let apply_response = (".sheetd.v1.ApplyResponse", "crate::grpc::apply_response::ApplyResponse");
    tonic_prost_build::configure()
        .codec_path("crate::grpc::codec::SheetdCodec")
        .extern_path(batch_values.0, batch_values.1)
        .extern_path(apply_response.0, apply_response.1)
        .compile_fds(fds)?;
    // serde (the canonical protobuf JSON mapping) for `--json` output.
    pbjson_build::Builder::new()
        .register_descriptors(&bytes)?
        .extern_path(batch_values.0, batch_values.1)
        .extern_path(apply_response.0, apply_response.1)
        .exclude([batch_values.0, apply_response.0])
        .build(&[".sheetd.v1"])?;
    Ok(())
}
