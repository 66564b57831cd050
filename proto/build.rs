//! Compiles every `.proto` under `proto/ramen/` with `protox` (pure Rust), so building ramen
//! never needs a system `protoc`.
//!
//! Two packages also derive serde, because the bus carries events as JSON: `ramen.common.v1`
//! and `ramen.events.v1`. Their enum fields are plain `i32` in prost, so each one gets
//! `crate::json` helpers that write the proto name; the list is derived from the descriptors
//! here, so a new enum field cannot be forgotten. Messages holding secrets skip the derived
//! `Debug`; `src/redact.rs` implements a redacting one (the compiler insists on both halves).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorSet};

/// Packages that derive serde (JSON on the bus).
const SERDE_PACKAGES: &[&str] = &["ramen.common.v1", "ramen.events.v1"];

/// Messages whose derived `Debug` would print a password, token, key or secret value.
const REDACTED: &[&str] = &[
    ".ramen.auth.v1.LoginRequest",
    ".ramen.auth.v1.TokenPair",
    ".ramen.auth.v1.RefreshRequest",
    ".ramen.auth.v1.LogoutRequest",
    ".ramen.auth.v1.ChangePasswordRequest",
    ".ramen.auth.v1.VerifyAccessTokenRequest",
    ".ramen.auth.v1.StartSsoResponse",
    ".ramen.auth.v1.FinishSsoRequest",
    ".ramen.auth.v1.FinishSsoResponse",
    ".ramen.auth.v1.RedeemSsoCodeRequest",
    ".ramen.auth.v1.CreateUserRequest",
    ".ramen.auth.v1.CreateUserResponse",
    ".ramen.auth.v1.CreateMcpKeyResponse",
    ".ramen.auth.v1.SetSecretRequest",
    ".ramen.auth.v1.ResolvedSecret",
    ".ramen.deployer.v1.UpdateSettingsRequest",
    ".ramen.zone.v1.NodeSecret",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    let mut files = Vec::new();
    collect(&root.join("ramen"), &mut files)?;
    files.sort();

    // tonic-prost-build 0.14 no longer emits rerun lines for protox inputs, so say them here
    // (otherwise an edited .proto would not rebuild).
    println!("cargo:rerun-if-changed=ramen");
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }

    let descriptors = protox::compile(&files, [&root])?;
    let serde = SerdePlan::from_descriptors(&descriptors)?;
    std::fs::write(out_dir.join("serde_enums.rs"), serde.enum_impls())?;

    let mut builder = tonic_prost_build::configure()
        .build_client(cfg!(feature = "client"))
        .build_server(cfg!(feature = "server"))
        .skip_debug(REDACTED);
    for package in SERDE_PACKAGES {
        let path = format!(".{package}");
        builder = builder
            .type_attribute(&path, "#[derive(::serde::Serialize, ::serde::Deserialize)]")
            // Missing fields take their proto default, like the binary encoding.
            .message_attribute(&path, "#[serde(default)]");
    }
    for (field_path, attribute) in &serde.field_attributes {
        builder = builder.field_attribute(field_path, attribute);
    }
    builder.compile_fds(descriptors)?;
    Ok(())
}

/// What the serde packages need beyond the derive: per enum field, its (de)serializer.
#[derive(Default)]
struct SerdePlan {
    /// Rust paths of every enum referenced by a serde field.
    enums: Vec<String>,
    /// (proto field path, attribute).
    field_attributes: Vec<(String, String)>,
}

impl SerdePlan {
    fn from_descriptors(fds: &FileDescriptorSet) -> Result<Self, String> {
        let mut plan = SerdePlan::default();
        for file in fds.file.iter().filter(|f| SERDE_PACKAGES.contains(&f.package())) {
            for message in &file.message_type {
                plan.message(file.package(), message)?;
            }
        }
        plan.enums.sort();
        plan.enums.dedup();
        Ok(plan)
    }

    fn message(&mut self, package: &str, message: &DescriptorProto) -> Result<(), String> {
        let name = format!(".{package}.{}", message.name());
        if !message.enum_type.is_empty() {
            return Err(format!("{name}: keep enums top-level in serde packages"));
        }
        for nested in &message.nested_type {
            let is_map_entry = nested.options.as_ref().is_some_and(|o| o.map_entry());
            if !is_map_entry {
                return Err(format!("{name}: keep messages top-level in serde packages"));
            }
        }
        for field in &message.field {
            let path = format!("{name}.{}", field.name());
            let type_name = field.type_name();
            match field.r#type() {
                Type::Message if type_name.starts_with(".google.protobuf.") => {
                    return Err(format!("{path}: no google.protobuf types in serde packages"));
                }
                Type::Message if !is_map_entry_type(message, type_name) => {
                    let package = type_name.trim_start_matches('.').rsplit_once('.').unwrap().0;
                    if !SERDE_PACKAGES.contains(&package) {
                        return Err(format!("{path}: {type_name} is not in a serde package"));
                    }
                }
                Type::Enum => self.enum_field(&path, type_name, field)?,
                _ => {}
            }
        }
        Ok(())
    }

    fn enum_field(
        &mut self,
        path: &str,
        type_name: &str,
        field: &FieldDescriptorProto,
    ) -> Result<(), String> {
        if field.proto3_optional() {
            return Err(format!("{path}: optional enum fields are not supported in serde"));
        }
        let rust = rust_path(type_name);
        self.enums.push(rust.clone());
        let module = if field.label() == Label::Repeated { "enum_list" } else { "enum_value" };
        let attribute = format!(
            "#[serde(serialize_with = \"crate::json::{module}::serialize::<{rust}, _>\", \
             deserialize_with = \"crate::json::{module}::deserialize::<{rust}, _>\")]"
        );
        self.field_attributes.push((path.to_owned(), attribute));
        Ok(())
    }

    fn enum_impls(&self) -> String {
        let mut out = String::from("// @generated by build.rs: enums used by serde fields.\n");
        for path in &self.enums {
            let _ = writeln!(out, "crate::json::proto_enum!({path});");
        }
        out
    }
}

fn is_map_entry_type(message: &DescriptorProto, type_name: &str) -> bool {
    message.nested_type.iter().any(|n| type_name.ends_with(&format!(".{}", n.name())))
}

/// `.ramen.common.v1.Track` -> `crate::common::v1::Track` (top-level enums only, checked above).
fn rust_path(proto_name: &str) -> String {
    let trimmed = proto_name.trim_start_matches(".ramen.");
    format!("crate::{}", trimmed.replace('.', "::"))
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "proto") {
            out.push(path);
        }
    }
    Ok(())
}
