//! The client subcommands and what each sends to the REST API.

use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::json;

use super::api::{Api, Failure, Outcome};
use super::output::{print, say};
use super::{deploy, exit};

/// Options every client subcommand takes.
#[derive(Args, Clone, Debug)]
pub struct Common {
    /// REST API base URL (default: the stored login's, else http://127.0.0.1:8080).
    #[arg(long, env = "RAMEN_API", global = true)]
    pub api: Option<String>,
    /// Machine-readable JSON on stdout instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Subcommand, Debug)]
pub enum ClientCommand {
    /// Log in and store the session: with an email and password (prompted for unless
    /// --password-stdin), or with the organisation's identity provider (--sso).
    Login {
        #[arg(required_unless_present = "sso", conflicts_with = "sso")]
        email: Option<String>,
        /// Single sign-on: sign in in a browser, at the organisation's identity provider.
        #[arg(long)]
        sso: bool,
        /// With --sso: print the URL to open instead of starting a browser.
        #[arg(long, requires = "sso")]
        no_browser: bool,
        /// Read the password from stdin (scripts).
        #[arg(long)]
        password_stdin: bool,
        /// Set a new password (required after a one-time bootstrap password); read from stdin
        /// after the current one when --password-stdin is given.
        #[arg(long)]
        new_password: bool,
    },
    /// Zones: where workers run.
    #[command(subcommand)]
    Zone(ZoneCmd),
    /// Groups: a team, its repo and what it owns.
    #[command(subcommand)]
    Group(GroupCmd),
    /// Environments: a group at a ref on a set of zones.
    #[command(subcommand)]
    Env(EnvCmd),
    /// Deploy an environment (canary first); --wait follows it live.
    Deploy {
        environment: String,
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
        #[arg(long = "ref")]
        git_ref: Option<String>,
        #[arg(long)]
        wait: bool,
    },
    /// Deploy jobs of a group (or one job with its steps); `approve` / `reject` decide the
    /// surface review a job waits on.
    #[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
    Jobs {
        /// Required unless a subcommand takes it (`None` only then).
        #[arg(long, short, env = "RAMEN_GROUP", required = true)]
        group: Option<String>,
        job: Option<String>,
        /// Cancel the job.
        #[arg(long, requires = "job")]
        cancel: bool,
        #[command(subcommand)]
        review: Option<ReviewCmd>,
    },
    /// MCP keys of a group.
    #[command(subcommand)]
    Keys(KeysCmd),
    /// Secrets of a group (values are never shown).
    #[command(subcommand)]
    Secrets(SecretsCmd),
    /// Show the bounds on what group admins may grant their workers in the cloud (AWS actions,
    /// GCP roles, resources); `--set FILE` replaces them (super admins; `-` reads stdin), from
    /// JSON shaped as `ramen bounds --json` prints it.
    Bounds {
        #[arg(long, value_name = "FILE")]
        set: Option<String>,
    },
    /// Block packages or tools on an environment (gone from lists, calls answer -32601).
    Block {
        environment: String,
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
        #[arg(required = true)]
        names: Vec<String>,
    },
    /// Unblock packages or tools on an environment.
    Unblock {
        environment: String,
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
        #[arg(required = true)]
        names: Vec<String>,
    },
    /// Show or set the IP rules (CIDRs) of a group's zone; `--clear` allows every source.
    IpRules {
        zone: String,
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
        cidrs: Vec<String>,
        #[arg(long, conflicts_with = "cidrs")]
        clear: bool,
    },
    /// Set the worker count (autoscaler minimum; maximum is twice it) of a group's zone.
    Scale {
        zone: String,
        count: u32,
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
    },
    /// A group's MCP calls, newest first: when, where, who, what and how it ended.
    Calls {
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
        #[arg(long)]
        environment: Option<String>,
        /// A tool, resource URI or prompt, exactly.
        #[arg(long)]
        tool: Option<String>,
        /// A caller's id (MCP key id or token subject), exactly.
        #[arg(long)]
        caller: Option<String>,
        #[arg(long, value_parser = ["ok", "tool_error", "error", "blocked", "refused", "cancelled", "overloaded"])]
        outcome: Option<String>,
        /// A duration back from now (`15m`, `2h`, `7d`) or an RFC 3339 time.
        #[arg(long)]
        since: Option<String>,
        /// At most this many calls.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// A group's calls summed up over the last hour, day or week: totals, each tool's calls,
    /// errors and p50/p99, and the busiest callers.
    Usage {
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
        #[arg(long)]
        environment: Option<String>,
        #[arg(long, default_value = "hour", value_parser = ["hour", "day", "week"])]
        window: String,
    },
    /// Packages a zone serves (from the last deploy); --disable/--enable one on that zone.
    Packages {
        zone: String,
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
        #[arg(long, conflicts_with = "enable")]
        disable: Option<String>,
        #[arg(long)]
        enable: Option<String>,
    },
}

/// A decision on the surface change a deploy job waits on (state `review`).
#[derive(Subcommand, Debug)]
pub enum ReviewCmd {
    /// Approve: stable takes the canary's surface.
    Approve {
        job: String,
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
        /// Why; kept with the decision and in the audit log.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Reject: the canary scales to zero; stable stays as it is.
    Reject {
        job: String,
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
        #[arg(long)]
        reason: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum ZoneCmd {
    Create {
        name: String,
        #[arg(long, default_value = "local")]
        provider: String,
        #[arg(long, default_value = "")]
        region: String,
        /// Sizes workers may have here (s, m, l); default all.
        #[arg(long = "size")]
        sizes: Vec<String>,
    },
    List,
    Delete {
        name: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum GroupCmd {
    Create {
        name: String,
        /// Git URL (https, ssh) or, locally, a path.
        #[arg(long)]
        repo: String,
        #[arg(long = "ref", default_value = "main")]
        git_ref: String,
    },
    List,
    Delete {
        name: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum EnvCmd {
    Create {
        name: String,
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
        #[arg(long = "ref")]
        git_ref: Option<String>,
        /// Zones to deploy to (repeat or comma-separate).
        #[arg(long = "zone", value_delimiter = ',', required = true)]
        zones: Vec<String>,
        #[arg(long)]
        verbose: bool,
        /// `review`: a deploy that changes the tool surface waits for a group admin;
        /// `allow`: the change is logged. Default: `review` for `prod`, `allow` otherwise.
        #[arg(long, value_parser = ["allow", "review"])]
        surface_changes: Option<String>,
        /// Call records keep each call's arguments (secrets redacted); off by default.
        #[arg(long)]
        record_arguments: bool,
    },
    /// Show or set whether a deploy that changes the tool surface (names, descriptions,
    /// schemas) waits for a group admin's review (`review`) or only logs it (`allow`).
    SurfaceChanges {
        name: String,
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
        #[arg(value_parser = ["allow", "review"])]
        setting: Option<String>,
    },
    /// Show or set whether call records keep each call's arguments (secrets redacted). A
    /// change reaches the nodes at the environment's next deploy.
    RecordArguments {
        name: String,
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
        #[arg(value_parser = ["on", "off"])]
        setting: Option<String>,
    },
    /// Environments of a group, or of every group you belong to.
    List {
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: Option<String>,
    },
    Delete {
        name: String,
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
    },
    /// How the environment's MCP clients authenticate (MCP keys, OAuth 2.1 access tokens or
    /// both) and who may call what. Without options: shows it. Options change only what they
    /// name.
    Auth {
        name: String,
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
        /// `keys`, `oauth`, `both`, or `default` (follow the platform default).
        #[arg(long)]
        mode: Option<String>,
        /// Authorization servers (issuer URLs) whose tokens count; replaces the list
        /// (repeat or comma-separate; `--issuer ''` clears it: the platform's apply).
        #[arg(long = "issuer", value_delimiter = ',')]
        issuers: Option<Vec<String>>,
        /// Scopes advertised, of which a token must hold one; replaces the list.
        #[arg(long = "scope", value_delimiter = ',')]
        scopes: Option<Vec<String>>,
        /// The rules of who may call what: a JSON array of
        /// `{"subjects","groups","scopes","keys","allow"}` from a file, or `-` for stdin.
        #[arg(long)]
        rules: Option<String>,
        /// Calls per second per caller at the edge; 0 = unlimited.
        #[arg(long)]
        rate: Option<u32>,
    },
}

#[derive(Subcommand, Debug)]
pub enum KeysCmd {
    /// Create a key; its plaintext is printed once.
    Create {
        name: String,
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
        #[arg(long = "env", value_delimiter = ',')]
        environments: Vec<String>,
        #[arg(long = "zone", value_delimiter = ',')]
        zones: Vec<String>,
        /// RFC 3339 expiry.
        #[arg(long)]
        expires_at: Option<String>,
    },
    List {
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
    },
    Revoke {
        key_id: String,
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum SecretsCmd {
    /// Set a secret from stdin (never from the command line, which others can read).
    Set {
        name: String,
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
        #[arg(long = "env", default_value = "")]
        environment: String,
        #[arg(long, default_value = "")]
        zone: String,
    },
    List {
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
    },
    Delete {
        name: String,
        #[arg(long, short, env = "RAMEN_GROUP")]
        group: String,
        #[arg(long = "env", default_value = "")]
        environment: String,
        #[arg(long, default_value = "")]
        zone: String,
    },
}

pub async fn run(command: ClientCommand, common: Common) -> Outcome<()> {
    let mut api = Api::new(common.api.clone());
    let json = common.json;
    match command {
        ClientCommand::Login { email, sso, no_browser, password_stdin, new_password } => {
            match email {
                Some(email) if !sso => {
                    login(&mut api, &email, password_stdin, new_password, json).await
                }
                _ => super::sso::login(&mut api, !no_browser, json).await,
            }
        }
        ClientCommand::Zone(cmd) => zone(&mut api, cmd, json).await,
        ClientCommand::Group(cmd) => group(&mut api, cmd, json).await,
        ClientCommand::Env(cmd) => env(&mut api, cmd, json).await,
        ClientCommand::Deploy { environment, group, git_ref, wait } => {
            deploy::start(&mut api, &group, &environment, git_ref, wait, json).await
        }
        ClientCommand::Jobs { review: Some(review), .. } => decide(&mut api, review, json).await,
        ClientCommand::Jobs { group: Some(group), job, cancel, review: None } => {
            jobs(&mut api, &group, job, cancel, json).await
        }
        ClientCommand::Jobs { group: None, review: None, .. } => {
            Err(Failure::new(exit::USAGE, "a group is required: --group or RAMEN_GROUP"))
        }
        ClientCommand::Keys(cmd) => keys(&mut api, cmd, json).await,
        ClientCommand::Secrets(cmd) => secrets(&mut api, cmd, json).await,
        ClientCommand::Bounds { set } => bounds(&mut api, set, json).await,
        ClientCommand::Block { environment, group, names } => {
            block(&mut api, &group, &environment, names, true, json).await
        }
        ClientCommand::Unblock { environment, group, names } => {
            block(&mut api, &group, &environment, names, false, json).await
        }
        ClientCommand::IpRules { zone, group, cidrs, clear } => {
            ip_rules(&mut api, &group, &zone, cidrs, clear, json).await
        }
        ClientCommand::Scale { zone, count, group } => {
            let body = json!({ "count": count });
            let placement = api
                .call(Method::PUT, &format!("/api/groups/{group}/zones/{zone}/count"), Some(&body))
                .await?;
            print(
                &placement,
                json,
                &["group", "zone", "worker_count", "max_workers", "size", "status"],
            );
            Ok(())
        }
        ClientCommand::Calls { group, environment, tool, caller, outcome, since, limit } => {
            let filter = super::calls::CallsFilter { environment, tool, caller, outcome, since };
            super::calls::calls(&mut api, &group, filter, limit, json).await
        }
        ClientCommand::Usage { group, environment, window } => {
            super::calls::usage(&mut api, &group, environment, &window, json).await
        }
        ClientCommand::Packages { zone, group, disable, enable } => {
            packages(&mut api, &group, &zone, disable, enable, json).await
        }
    }
}

fn read_line(prompt: &str, from_stdin: bool) -> Outcome<String> {
    if !from_stdin {
        eprint!("{prompt}");
    }
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
    let line = line.trim_end_matches(['\r', '\n']).to_owned();
    if line.is_empty() {
        return Err(Failure::new(
            exit::USAGE,
            format!("{} is empty", prompt.trim_end_matches(": ")),
        ));
    }
    Ok(line)
}

async fn login(
    api: &mut Api,
    email: &str,
    stdin: bool,
    new_password: bool,
    json: bool,
) -> Outcome<()> {
    let password = read_line("password: ", stdin)?;
    let body = json!({ "email": email, "password": password });
    let session = api.call(Method::POST, "/api/auth/login", Some(&body)).await?;
    api.remember(&session)?;
    if session["must_change_password"].as_bool() == Some(true) || new_password {
        if !new_password {
            return Err(Failure::new(
                exit::DENIED,
                "this one-time password must be changed: run `ramen login <email> --new-password`",
            ));
        }
        let fresh = read_line("new password: ", stdin)?;
        let body = json!({ "current_password": password, "new_password": fresh });
        let session = api.call(Method::POST, "/api/auth/password", Some(&body)).await?;
        api.remember(&session)?;
    }
    say(json, &format!("logged in to {} as {email}", api.credentials.api_url));
    if json {
        print(&json!({ "api_url": api.credentials.api_url, "email": email }), true, &[]);
    }
    Ok(())
}

async fn zone(api: &mut Api, cmd: ZoneCmd, json: bool) -> Outcome<()> {
    const COLUMNS: &[&str] = &["name", "provider", "region", "allowed_sizes"];
    match cmd {
        ZoneCmd::Create { name, provider, region, sizes } => {
            let body = json!({ "name": name, "provider": provider, "region": region, "allowed_sizes": sizes });
            print(&api.call(Method::POST, "/api/zones", Some(&body)).await?, json, COLUMNS);
        }
        ZoneCmd::List => print(
            &api.call(Method::GET, "/api/zones", None).await?,
            json,
            &["name", "provider", "region", "allowed_sizes", "workers"],
        ),
        ZoneCmd::Delete { name } => {
            api.call(Method::DELETE, &format!("/api/zones/{name}"), None).await?;
            say(json, &format!("zone {name} deleted (its workers are torn down)"));
        }
    }
    Ok(())
}

async fn group(api: &mut Api, cmd: GroupCmd, json: bool) -> Outcome<()> {
    const COLUMNS: &[&str] = &["name", "repo_url", "default_ref", "status"];
    match cmd {
        GroupCmd::Create { name, repo, git_ref } => {
            let repo = local_repo(&repo);
            let body = json!({ "name": name, "repo_url": repo, "default_ref": git_ref });
            print(&api.call(Method::POST, "/api/groups", Some(&body)).await?, json, COLUMNS);
        }
        GroupCmd::List => print(&api.call(Method::GET, "/api/groups", None).await?, json, COLUMNS),
        GroupCmd::Delete { name } => {
            let answer = api.call(Method::DELETE, &format!("/api/groups/{name}"), None).await?;
            if json {
                print(&answer, true, &[]);
            }
            say(json, &format!("group {name} is being deleted with everything it owns"));
        }
    }
    Ok(())
}

/// A relative local path is made absolute: the server resolves paths from its own directory.
fn local_repo(repo: &str) -> String {
    let path = std::path::Path::new(repo);
    if !repo.contains("://") && !repo.contains('@') && path.exists() {
        return path
            .canonicalize()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| repo.to_owned());
    }
    repo.to_owned()
}

async fn env(api: &mut Api, cmd: EnvCmd, json: bool) -> Outcome<()> {
    const COLUMNS: &[&str] = &[
        "group",
        "name",
        "git_ref",
        "zones",
        "last_deploy.outcome",
        "last_deploy.finished_at",
        "last_deploy.error",
    ];
    match cmd {
        EnvCmd::Create {
            name,
            group,
            git_ref,
            zones,
            verbose,
            surface_changes,
            record_arguments,
        } => {
            let body = json!({ "name": name, "git_ref": git_ref, "zones": zones,
                "verbose": verbose, "surface_changes": surface_changes,
                "record_arguments": record_arguments });
            print(
                &api.call(Method::POST, &format!("/api/groups/{group}/environments"), Some(&body))
                    .await?,
                json,
                COLUMNS,
            );
        }
        EnvCmd::List { group } => {
            let path = group.map_or_else(
                || "/api/environments".to_owned(),
                |g| format!("/api/groups/{g}/environments"),
            );
            print(&api.call(Method::GET, &path, None).await?, json, COLUMNS);
        }
        EnvCmd::SurfaceChanges { name, group, setting } => {
            let path = format!("/api/groups/{group}/environments/{name}");
            let env = match setting {
                Some(setting) => {
                    let body = json!({ "surface_changes": setting });
                    api.call(Method::PATCH, &path, Some(&body)).await?
                }
                None => api.call(Method::GET, &path, None).await?,
            };
            print(&env, json, &["group", "name", "surface_changes"]);
        }
        EnvCmd::RecordArguments { name, group, setting } => {
            let path = format!("/api/groups/{group}/environments/{name}");
            let env = match setting {
                Some(setting) => {
                    let body = json!({ "record_arguments": setting == "on" });
                    api.call(Method::PATCH, &path, Some(&body)).await?
                }
                None => api.call(Method::GET, &path, None).await?,
            };
            print(&env, json, &["group", "name", "record_arguments"]);
        }
        EnvCmd::Delete { name, group } => {
            api.call(Method::DELETE, &format!("/api/groups/{group}/environments/{name}"), None)
                .await?;
            say(json, &format!("environment {name} deleted"));
        }
        EnvCmd::Auth { name, group, mode, issuers, scopes, rules, rate } => {
            let change = AuthChange { mode, issuers, scopes, rules, rate };
            env_auth(api, &group, &name, change, json).await?;
        }
    }
    Ok(())
}

/// The options of `ramen env auth`: each `None` keeps what is set.
struct AuthChange {
    mode: Option<String>,
    issuers: Option<Vec<String>>,
    scopes: Option<Vec<String>>,
    rules: Option<String>,
    rate: Option<u32>,
}

async fn env_auth(
    api: &mut Api,
    group: &str,
    name: &str,
    change: AuthChange,
    json: bool,
) -> Outcome<()> {
    let path = format!("/api/groups/{group}/environments/{name}");
    let env = api.call(Method::GET, &path, None).await?;
    let AuthChange { mode, issuers, scopes, rules, rate } = change;
    let changing = mode.is_some()
        || issuers.is_some()
        || scopes.is_some()
        || rules.is_some()
        || rate.is_some();
    let shown = if changing {
        let current = &env["auth"];
        // The environment's own setting: what it shows as inherited from the platform is not
        // written back as its own.
        let inherited = current["inherited"].as_bool().unwrap_or(false);
        let mode = match mode.as_deref() {
            Some("default") => serde_json::Value::Null,
            Some(mode @ ("keys" | "oauth" | "both")) => json!(mode),
            Some(other) => {
                return Err(Failure::new(
                    exit::USAGE,
                    format!("--mode {other:?} is not one of keys, oauth, both, default"),
                ));
            }
            None if inherited => serde_json::Value::Null,
            None => current["mode"].clone(),
        };
        let list = |given: Option<Vec<String>>, key: &str| -> serde_json::Value {
            match given {
                Some(values) => {
                    json!(values.into_iter().filter(|v| !v.trim().is_empty()).collect::<Vec<_>>())
                }
                None => current[key].clone(),
            }
        };
        let rules = match rules {
            None => current["rules"].clone(),
            Some(file) => {
                let text = if file == "-" {
                    std::io::read_to_string(std::io::stdin())
                } else {
                    std::fs::read_to_string(&file)
                };
                let text = text.map_err(|e| Failure::new(exit::USAGE, format!("{file}: {e}")))?;
                serde_json::from_str::<serde_json::Value>(&text)
                    .ok()
                    .filter(serde_json::Value::is_array)
                    .ok_or_else(|| {
                        Failure::new(exit::USAGE, format!("{file} is not a JSON array of rules"))
                    })?
            }
        };
        let body = json!({
            "mode": mode,
            "issuers": list(issuers, "issuers"),
            "scopes": list(scopes, "scopes"),
            "rules": rules,
            "calls_per_second": rate.map_or_else(|| current["calls_per_second"].clone(), |r| json!(r)),
        });
        api.call(Method::PUT, &format!("{path}/auth"), Some(&body)).await?["auth"].clone()
    } else {
        env["auth"].clone()
    };
    if json {
        print(&shown, true, &[]);
        return Ok(());
    }
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join(", "),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    };
    let mode = if shown["inherited"].as_bool().unwrap_or(false) {
        format!("{} (platform default)", text(&shown["mode"]))
    } else {
        text(&shown["mode"])
    };
    let rules = shown["rules"].as_array().cloned().unwrap_or_default();
    let rows = [
        ("mode", mode),
        ("resource", text(&shown["resource"])),
        ("metadata", text(&shown["metadata_url"])),
        ("issuers", text(&shown["issuers"])),
        ("scopes", text(&shown["scopes"])),
        ("calls/s per caller", text(&shown["calls_per_second"])),
        ("rules", rules.len().to_string()),
    ];
    let mut table: Vec<serde_json::Value> =
        rows.iter().map(|(k, v)| json!({"setting": k, "value": v})).collect();
    for (n, rule) in rules.iter().enumerate() {
        let who: Vec<String> = ["subjects", "groups", "roles", "scopes", "keys"]
            .iter()
            .filter(|k| rule[**k].as_array().is_some_and(|a| !a.is_empty()))
            .map(|k| format!("{k}: {}", text(&rule[*k])))
            .collect();
        let who = if who.is_empty() { "everyone".to_owned() } else { who.join("; ") };
        table.push(json!({"setting": format!("rule {n}"), "value": format!("{who} → {}", text(&rule["allow"]))}));
    }
    print(&serde_json::Value::Array(table), false, &["setting", "value"]);
    Ok(())
}

async fn jobs(
    api: &mut Api,
    group: &str,
    job: Option<String>,
    cancel: bool,
    json: bool,
) -> Outcome<()> {
    match (job, cancel) {
        (Some(job), true) => {
            print(
                &api.call(Method::POST, &format!("/api/groups/{group}/jobs/{job}/cancel"), None)
                    .await?,
                json,
                &["id", "state"],
            );
        }
        (Some(job), false) => {
            let job =
                api.call(Method::GET, &format!("/api/groups/{group}/jobs/{job}"), None).await?;
            deploy::print_job(&job, json);
        }
        (None, _) => {
            let jobs = api.call(Method::GET, &format!("/api/groups/{group}/jobs"), None).await?;
            print(
                &jobs,
                json,
                &["id", "environment", "git_ref", "commit", "state", "created_at", "error"],
            );
        }
    }
    Ok(())
}

async fn decide(api: &mut Api, cmd: ReviewCmd, json: bool) -> Outcome<()> {
    let (verb, job, group, reason) = match cmd {
        ReviewCmd::Approve { job, group, reason } => ("approve", job, group, reason),
        ReviewCmd::Reject { job, group, reason } => ("reject", job, group, reason),
    };
    let body = json!({ "reason": reason.unwrap_or_default() });
    let path = format!("/api/groups/{group}/jobs/{job}/{verb}");
    let job = api.call(Method::POST, &path, Some(&body)).await?;
    if json {
        print(&job, true, &[]);
    } else {
        let decision = job["review"]["decision"].as_str().unwrap_or_default();
        say(
            false,
            &format!(
                "job {}: review {decision}; the deploy goes on",
                job["id"].as_str().unwrap_or_default()
            ),
        );
    }
    Ok(())
}

async fn keys(api: &mut Api, cmd: KeysCmd, json: bool) -> Outcome<()> {
    const COLUMNS: &[&str] = &[
        "id",
        "name",
        "prefix",
        "environments",
        "zones",
        "expires_at",
        "last_used_at",
        "revoked_at",
    ];
    match cmd {
        KeysCmd::Create { name, group, environments, zones, expires_at } => {
            let body = json!({ "name": name, "environments": environments, "zones": zones, "expires_at": expires_at });
            let created =
                api.call(Method::POST, &format!("/api/groups/{group}/keys"), Some(&body)).await?;
            if json {
                print(&created, true, &[]);
            } else {
                say(
                    false,
                    &format!(
                        "key {} created; copy it now, it is never shown again:",
                        created["key"]["id"].as_str().unwrap_or_default()
                    ),
                );
                say(false, created["plaintext"].as_str().unwrap_or_default());
            }
        }
        KeysCmd::List { group } => print(
            &api.call(Method::GET, &format!("/api/groups/{group}/keys"), None).await?,
            json,
            COLUMNS,
        ),
        KeysCmd::Revoke { key_id, group } => {
            api.call(Method::DELETE, &format!("/api/groups/{group}/keys/{key_id}"), None).await?;
            say(json, &format!("key {key_id} revoked"));
        }
    }
    Ok(())
}

async fn secrets(api: &mut Api, cmd: SecretsCmd, json: bool) -> Outcome<()> {
    match cmd {
        SecretsCmd::Set { name, group, environment, zone } => {
            let value = read_line("value: ", true)?;
            let body = json!({ "value": value, "environment": environment, "zone": zone });
            let secret = api
                .call(Method::PUT, &format!("/api/groups/{group}/secrets/{name}"), Some(&body))
                .await?;
            print(&secret, json, &["name", "environment", "zone", "updated_at"]);
        }
        SecretsCmd::List { group } => {
            let secrets =
                api.call(Method::GET, &format!("/api/groups/{group}/secrets"), None).await?;
            print(&secrets, json, &["name", "environment", "zone", "updated_at", "updated_by"]);
        }
        SecretsCmd::Delete { name, group, environment, zone } => {
            let path =
                format!("/api/groups/{group}/secrets/{name}?environment={environment}&zone={zone}");
            api.call(Method::DELETE, &path, None).await?;
            say(json, &format!("secret {name} deleted"));
        }
    }
    Ok(())
}

const BOUNDS: &str = "/api/service-account-bounds";

async fn bounds(api: &mut Api, set: Option<String>, json: bool) -> Outcome<()> {
    let shown = match set {
        None => api.call(Method::GET, BOUNDS, None).await?,
        Some(file) => {
            let text = if file == "-" {
                std::io::read_to_string(std::io::stdin())
            } else {
                std::fs::read_to_string(&file)
            };
            let text = text.map_err(|e| Failure::new(exit::USAGE, format!("{file}: {e}")))?;
            let mut body: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                Failure::new(exit::USAGE, format!("{file} is not JSON bounds: {e}"))
            })?;
            // What `ramen bounds --json` printed may be sent back as it is: its version
            // guards against overwriting someone else's change.
            if let Some(fields) = body.as_object_mut() {
                let version = fields.remove("version");
                fields.remove("updated_at");
                fields.remove("updated_by");
                if let Some(version) = version.filter(|_| !fields.contains_key("expected_version"))
                {
                    fields.insert("expected_version".into(), version);
                }
            }
            api.call(Method::PUT, BOUNDS, Some(&body)).await?
        }
    };
    if json {
        print(&shown, true, &[]);
        return Ok(());
    }
    let rows: Vec<serde_json::Value> = ["aws", "gcp"]
        .iter()
        .map(|provider| {
            let mut row = shown[*provider].clone();
            row["provider"] = json!(provider);
            row
        })
        .collect();
    let columns = ["provider", "permissions", "denied", "resources", "wildcards", "unscoped"];
    print(&serde_json::Value::Array(rows), false, &columns);
    Ok(())
}

async fn block(
    api: &mut Api,
    group: &str,
    environment: &str,
    names: Vec<String>,
    add: bool,
    json: bool,
) -> Outcome<()> {
    let path = format!("/api/groups/{group}/environments/{environment}");
    let current = api.call(Method::GET, &path, None).await?;
    let mut blocked: Vec<String> = current["blocked"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    if add {
        for name in names {
            if !blocked.contains(&name) {
                blocked.push(name);
            }
        }
    } else {
        blocked.retain(|b| !names.contains(b));
    }
    let updated = api.call(Method::PATCH, &path, Some(&json!({ "blocked": blocked }))).await?;
    print(&updated, json, &["group", "name", "blocked"]);
    Ok(())
}

async fn ip_rules(
    api: &mut Api,
    group: &str,
    zone: &str,
    cidrs: Vec<String>,
    clear: bool,
    json: bool,
) -> Outcome<()> {
    let path = format!("/api/groups/{group}/zones/{zone}");
    let placement = if cidrs.is_empty() && !clear {
        api.call(Method::GET, &path, None).await?
    } else {
        api.call(Method::PUT, &format!("{path}/ip-rules"), Some(&json!({ "ip_rules": cidrs })))
            .await?
    };
    print(&placement, json, &["group", "zone", "ip_rules", "status"]);
    Ok(())
}

async fn packages(
    api: &mut Api,
    group: &str,
    zone: &str,
    disable: Option<String>,
    enable: Option<String>,
    json: bool,
) -> Outcome<()> {
    let base = format!("/api/groups/{group}/zones/{zone}/packages");
    if let Some(package) = disable {
        api.call(Method::POST, &format!("{base}/{package}/disable"), None).await?;
        say(json, &format!("package {package} disabled on {zone}"));
    } else if let Some(package) = enable {
        api.call(Method::POST, &format!("{base}/{package}/enable"), None).await?;
        say(json, &format!("package {package} enabled on {zone}"));
    }
    let packages = api.call(Method::GET, &base, None).await?;
    print(&packages, json, &["name", "disabled", "tools", "resources", "prompts", "error"]);
    Ok(())
}
