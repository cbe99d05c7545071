//! The `sheetd client` calls an operator or a batch job makes: `load` a ruleset, `upgrade` a
//! sheet to its ruleset's current version, `health` (the standard health check, no token
//! needed), and `batch` (SolveBatch over JSON lines, as `sheetd batch` reads them offline).

use super::client::{Client, json_operations, print_json, st};
use crate::grpc::proto as pb;
use std::io::BufRead;
use std::path::PathBuf;
use tonic::transport::Channel;

/// `client load`: a ruleset from paths the server can read, or inline text from a file here.
pub async fn load(
    c: &mut Client,
    id: String,
    paths: Vec<String>,
    inline: Option<PathBuf>,
    dialect: Option<String>,
    json: bool,
) -> Result<(), String> {
    let inline_text = super::client::read_inline(inline)?;
    let req =
        pb::LoadRulesetRequest { id: id.clone(), paths, inline_text, dialect: dialect.unwrap_or_default() };
    let r = c.load_ruleset(req).await.map_err(st)?.into_inner();
    if json {
        return print_json(&r);
    }
    let info = r.ruleset.unwrap_or_default();
    let summary = info.summary.unwrap_or_default();
    println!(
        "loaded {id} version {}: {} variables, {} objects, {} modifiers",
        info.version, summary.variables, summary.objects, summary.modifiers
    );
    for w in &r.warnings {
        eprintln!("warning: {}: {}", w.code, w.message);
    }
    Ok(())
}

/// `client upgrade`: moves a sheet to its ruleset's current version.
pub async fn upgrade(c: &mut Client, sheet: String, json: bool) -> Result<(), String> {
    let r = c.upgrade(pb::UpgradeRequest { sheet_id: sheet.clone() }).await.map_err(st)?.into_inner();
    if json {
        return print_json(&r);
    }
    let a = r.result.unwrap_or_default();
    match &a.moved {
        Some(m) => {
            println!(
                "{sheet} moved from ruleset version {} to {} (revision {})",
                m.from_version, m.to_version, a.revision
            );
            for ch in &m.changes {
                println!("{}", super::client::change_line(ch));
            }
        }
        None => println!("{sheet} is on its ruleset's current version (revision {})", a.revision),
    }
    Ok(())
}

/// `client health`: the standard health check of the API service. Exit 0 when it serves.
pub async fn health(channel: Channel, json: bool) -> Result<(), String> {
    use tonic_health::pb::{
        HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
    };
    let service = "sheetd.v1.SheetdService".to_owned();
    let r = HealthClient::new(channel).check(HealthCheckRequest { service }).await.map_err(st)?.into_inner();
    let status = ServingStatus::try_from(r.status).unwrap_or(ServingStatus::Unknown);
    if json {
        println!("{}", serde_json::json!({ "status": status.as_str_name() }));
    } else {
        println!("{}", status.as_str_name());
    }
    if status == ServingStatus::Serving {
        Ok(())
    } else {
        Err(format!("error: the API is {}", status.as_str_name()))
    }
}

/// `client batch`: SolveBatch over JSON lines (`{"id", "steps", "variables"?}`, from a file or
/// standard input), a line of JSON out per item as results arrive: `{"id", "values": {REF:
/// VALUE}}` or `{"id", "error": [diagnostics]}`. Exit 1 when any item failed.
pub async fn batch(c: &mut Client, ruleset: Option<String>, input: Option<PathBuf>) -> Result<(), String> {
    let lines: Vec<String> = match &input {
        Some(p) if p.as_os_str() != "-" => std::fs::read_to_string(p)
            .map_err(|e| format!("error: cannot read {}: {e}", p.display()))?
            .lines()
            .map(str::to_owned)
            .collect(),
        _ => std::io::stdin()
            .lock()
            .lines()
            .collect::<Result<_, _>>()
            .map_err(|e| format!("error: stdin: {e}"))?,
    };
    let mut items = Vec::new();
    for (n, line) in lines.iter().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = |m: String| format!("error: line {}: {m}", n + 1);
        // The line format of `sheetd batch`.
        let spec: super::batch::Spec = serde_json::from_str(line).map_err(|e| at(e.to_string()))?;
        let id = spec.id.as_str().map_or_else(|| spec.id.to_string(), str::to_owned);
        let operations = json_operations(&spec.steps, None).map_err(at)?;
        items.push(pb::SolveBatchRequest {
            id,
            ruleset_id: ruleset.clone().unwrap_or_default(),
            operations,
            variables: spec.variables,
        });
    }
    let mut stream = c.solve_batch(futures_util::stream::iter(items)).await.map_err(st)?.into_inner();
    let (mut failed, mut all) = (0, 0);
    while let Some(r) = stream.message().await.map_err(st)? {
        all += 1;
        let line = match r.result {
            Some(pb::solve_batch_response::Result::Values(v)) => {
                let values: serde_json::Map<String, serde_json::Value> = v
                    .values
                    .iter()
                    .map(|x| {
                        (
                            x.r#ref.clone(),
                            serde_json::Value::String(
                                x.value.as_ref().map(crate::grpc::convert::show).unwrap_or_default(),
                            ),
                        )
                    })
                    .collect();
                serde_json::json!({ "id": r.id, "values": values })
            }
            Some(pb::solve_batch_response::Result::Error(e)) => {
                failed += 1;
                let said: Vec<_> = e
                    .diagnostics
                    .iter()
                    .map(|d| serde_json::json!({"code": d.code, "message": d.message}))
                    .collect();
                serde_json::json!({ "id": r.id, "error": said })
            }
            None => continue,
        };
        println!("{line}");
    }
    if failed > 0 { Err(format!("error: {failed} of {all} sheets failed")) } else { Ok(()) }
}
