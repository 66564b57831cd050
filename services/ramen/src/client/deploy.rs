//! `ramen deploy`: start a deploy and, with `--wait`, follow it zone by zone, step by step.

use std::collections::HashMap;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::api::{Api, Failure, Outcome};
use super::exit;
use super::output::{print, say};

/// `JOB_STATE_SUCCEEDED`, `succeeded`, `SUCCEEDED` → `succeeded`.
fn name(value: &Value) -> String {
    let raw = value.as_str().unwrap_or_default().to_ascii_lowercase();
    ["job_state_", "step_status_", "deploy_step_"]
        .iter()
        .find_map(|p| raw.strip_prefix(p))
        .map(str::to_owned)
        .unwrap_or(raw)
}

fn finished(state: &str) -> bool {
    matches!(state, "succeeded" | "failed" | "cancelled" | "dead_lettered")
}

pub async fn start(
    api: &mut Api,
    group: &str,
    environment: &str,
    git_ref: Option<String>,
    wait: bool,
    json: bool,
) -> Outcome<()> {
    let path = format!("/api/groups/{group}/environments/{environment}/deploys");
    let job = api.call(Method::POST, &path, Some(&json!({ "git_ref": git_ref }))).await?;
    let id = job["id"].as_str().unwrap_or_default().to_owned();
    if !wait {
        print(&job, json, &["id", "environment", "git_ref", "state"]);
        return Ok(());
    }
    say(json, &format!("deploy {id} of {group}/{environment} started"));
    let job = follow(api, group, &id, json).await?;
    if json {
        print(&job, true, &[]);
    }
    match name(&job["state"]).as_str() {
        "succeeded" => {
            say(
                json,
                &format!(
                    "deploy {id} succeeded at commit {}",
                    job["commit"].as_str().unwrap_or_default()
                ),
            );
            Ok(())
        }
        state => Err(Failure::new(
            exit::DEPLOY_FAILED,
            format!("deploy {id} {state}: {}", job["error"].as_str().unwrap_or("see `ramen jobs`")),
        )),
    }
}

/// Polls the job and prints every step transition until it finishes.
async fn follow(api: &mut Api, group: &str, id: &str, json: bool) -> Outcome<Value> {
    let mut seen: HashMap<(String, String), String> = HashMap::new();
    let mut told_review = false;
    loop {
        let job = api.call(Method::GET, &format!("/api/groups/{group}/jobs/{id}"), None).await?;
        if !told_review && name(&job["state"]) == "review" {
            told_review = true;
            say(json, &review_notice(&job, group, id));
        }
        for zone in job["zones"].as_array().into_iter().flatten() {
            let zone_name = zone["zone"].as_str().unwrap_or_default().to_owned();
            for step in zone["steps"].as_array().into_iter().flatten() {
                let step_name = name(&step["step"]);
                let status = name(&step["status"]);
                if status == "pending"
                    || seen.get(&(zone_name.clone(), step_name.clone())) == Some(&status)
                {
                    continue;
                }
                let detail = [step["outcome"].as_str(), step["error"].as_str()]
                    .into_iter()
                    .flatten()
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join(": ");
                say(
                    json,
                    &format!(
                        "  {zone_name:<12} {step_name:<16} {status}{}",
                        if detail.is_empty() { String::new() } else { format!("  {detail}") }
                    ),
                );
                seen.insert((zone_name.clone(), step_name), status);
            }
        }
        if finished(&name(&job["state"])) {
            return Ok(job);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// What a parked job waits for, and how to decide: the changes per zone, then the commands.
fn review_notice(job: &Value, group: &str, id: &str) -> String {
    let mut lines =
        vec!["the tools' surface changed; the deploy waits for a group admin's review:".to_owned()];
    for zone in job["zones"].as_array().into_iter().flatten() {
        for change in zone["surface_changes"].as_array().into_iter().flatten() {
            lines.push(format!(
                "  {:<12} {} {} {}",
                zone["zone"].as_str().unwrap_or_default(),
                change["change"].as_str().unwrap_or_default(),
                change["kind"].as_str().unwrap_or_default(),
                change["name"].as_str().unwrap_or_default(),
            ));
        }
    }
    lines.push(format!(
        "see them with `ramen jobs -g {group} {id} --json` or on the job's page in the console; \
         decide with `ramen jobs approve {id} -g {group}` or `ramen jobs reject {id} -g {group}`"
    ));
    lines.join("\n")
}

/// One job with its zones and steps.
pub fn print_job(job: &Value, json: bool) {
    if json {
        print(job, true, &[]);
        return;
    }
    print(job, false, &["id", "environment", "git_ref", "commit", "state", "error"]);
    for zone in job["zones"].as_array().into_iter().flatten() {
        for step in zone["steps"].as_array().into_iter().flatten() {
            say(
                false,
                &format!(
                    "  {:<12} {:<16} {:<10} {}",
                    zone["zone"].as_str().unwrap_or_default(),
                    name(&step["step"]),
                    name(&step["status"]),
                    step["outcome"].as_str().or(step["error"].as_str()).unwrap_or_default()
                ),
            );
        }
    }
}
