//! `ramen nats-auth init`: the NATS operator-mode setup of a split or cloud deployment — what
//! `ramen up` generates for itself into `<data_dir>/keys/nats`. One directory holds the key set
//! (kept when present, so running it again re-issues every credential from the same keys, with
//! the permission table of this ramen), the server's configuration include, one `.creds` per
//! service and the node signing key; `--helm-values` also writes them as values for the chart.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use ramen_bus::auth::{AuthKeys, BusNames, NODE_SIGNING_FILE, Role, SERVER_CONFIG_FILE};
use ramen_config::{Config, EXIT_CONFIG, NatsConfig};

#[derive(Subcommand)]
pub enum NatsAuthCommand {
    /// Generate (or re-issue from the keys already in --out) the NATS operator, accounts and
    /// one user per service. Stream and bucket names follow RAMEN_NATS_* / ramen.toml.
    Init(Init),
    /// Print each service's permissions as nats-server `authorization` users, for a server
    /// configured with users and passwords instead of operator mode (passwords from
    /// $RAMEN_NATS_PASSWORD_<SERVICE> when the server reads its configuration).
    Permissions,
}

#[derive(Args)]
pub struct Init {
    /// The directory to write into (created 0700; seeds and credentials 0600).
    #[arg(long)]
    out: PathBuf,
    /// Also write a values file for charts/ramen: the bundled NATS's operator configuration
    /// (nats.config.merge) and the credentials Secret (global.secrets.nats).
    #[arg(long)]
    helm_values: Option<PathBuf>,
}

pub fn main(command: NatsAuthCommand) -> ExitCode {
    let nats =
        match Config::figment(Some(Path::new("ramen.toml"))).extract_inner::<NatsConfig>("nats") {
            Ok(nats) => nats,
            Err(err) => {
                eprintln!("ramen nats-auth: invalid `nats` configuration: {err}");
                return ExitCode::from(EXIT_CONFIG as u8);
            }
        };
    let names = ramen_service::bus_names(&nats);
    let done = match command {
        NatsAuthCommand::Init(args) => init(&args, &names),
        NatsAuthCommand::Permissions => print_users(&names),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("ramen nats-auth: {err}");
            ExitCode::FAILURE
        }
    }
}

fn init(args: &Init, names: &BusNames) -> anyhow::Result<()> {
    let keys = ramen_bus::auth::write_bundle(&args.out, names)?;
    if let Some(path) = &args.helm_values {
        std::fs::write(path, helm_values(&keys, names)?)?;
        set_private(path)?;
    }
    let out = args.out.display();
    eprintln!("NATS operator mode for ramen in {out}:");
    eprintln!(
        "  {SERVER_CONFIG_FILE}   include it in nats-server's configuration (public claims only)"
    );
    for role in Role::SERVICES {
        eprintln!("  {}.creds   RAMEN_NATS_CREDS of `ramen serve {}`", role.name(), role.name());
    }
    eprintln!("  control-plane.creds   RAMEN_NATS_CREDS of `ramen up` against this server");
    eprintln!(
        "  {NODE_SIGNING_FILE}   RAMEN_NATS_SIGNING_KEY of the zone-manager (mints node users)"
    );
    eprintln!(
        "  operator.nk, system-account.nk, account.nk   the keys everything is signed with: keep \
         them, offline; run this command again on the same directory to re-issue"
    );
    if let Some(path) = &args.helm_values {
        eprintln!(
            "  {}   `helm install ... -f` it (holds every credential: a secret)",
            path.display()
        );
    }
    Ok(())
}

/// Values for charts/ramen: the bundled NATS in operator mode, and the Secret of every
/// service's credentials and the node signing key.
fn helm_values(keys: &AuthKeys, names: &BusNames) -> anyhow::Result<String> {
    let [system, ramen] = keys.account_jwts()?;
    let mut out = String::from(
        "# Written by `ramen nats-auth init --helm-values`: holds every service's NATS\n\
         # credentials. Keep it secret (or use global.secrets.nats.existingSecret instead).\n\
         nats:\n  config:\n    merge:\n",
    );
    writeln!(out, "      operator: {}", keys.operator_jwt()?)?;
    writeln!(out, "      system_account: {}", system.0)?;
    writeln!(out, "      resolver: MEMORY")?;
    writeln!(out, "      resolver_preload:")?;
    writeln!(out, "        {}: {}", system.0, system.1)?;
    writeln!(out, "        {}: {}", ramen.0, ramen.1)?;
    writeln!(out, "      max_control_line: {}", ramen_bus::auth::MAX_CONTROL_LINE)?;
    out.push_str("global:\n  secrets:\n    nats:\n      credentials:\n");
    for role in Role::SERVICES {
        writeln!(out, "        {}: |", role.name())?;
        for line in keys.credentials(role, names)?.to_text().lines() {
            writeln!(out, "          {line}")?;
        }
    }
    writeln!(out, "      signingKey: {}", keys.node_signing_seed()?)?;
    Ok(out)
}

/// nats-server `authorization` users with each service's permissions, plus a `nodes` user for
/// load reports (a static configuration cannot bind a node to its placement: any holder of that
/// password may report for any placement, and the rebalancer only checks that a report's
/// payload matches its subject).
fn static_users(names: &BusNames) -> String {
    use ramen_bus::auth::jwt::{Permissions, Rule};
    let list = |subjects: &[String]| {
        subjects.iter().map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(", ")
    };
    let rule = |rule: &Rule| {
        let mut parts = Vec::new();
        if !rule.allow.is_empty() {
            parts.push(format!("allow: [{}]", list(&rule.allow)));
        }
        if !rule.deny.is_empty() {
            parts.push(format!("deny: [{}]", list(&rule.deny)));
        }
        format!("{{ {} }}", parts.join(", "))
    };
    let nodes = Permissions {
        publish: Rule::allow(vec![ramen_bus::auth::NODE_LOAD_FILTER.to_owned()]),
        subscribe: Rule::nothing(),
    };
    let users = Role::SERVICES
        .into_iter()
        .map(|role| (role.name(), role.permissions(names)))
        .chain([("nodes", nodes)]);
    let mut out = String::from(
        "# ramen's NATS users for a server without operator mode (`ramen nats-auth permissions`).\n\
         # Each service connects as the user named like it (nats://<service>:<password>@host),\n\
         # whose replies arrive under _INBOX_<service>. Passwords: the environment of nats-server.\n\
         authorization {\n  users: [\n",
    );
    for (user, permissions) in users {
        let password = format!("$RAMEN_NATS_PASSWORD_{}", user.to_uppercase().replace('-', "_"));
        let _ = writeln!(
            out,
            "    {{\n      user: \"{user}\"\n      password: {password}\n      permissions: {{\n        \
             publish: {}\n        subscribe: {}\n      }}\n    }}",
            rule(&permissions.publish),
            rule(&permissions.subscribe)
        );
    }
    out.push_str("  ]\n}\n");
    out
}

#[allow(clippy::print_stdout)] // the configuration on stdout is this command's output
fn print_users(names: &BusNames) -> anyhow::Result<()> {
    print!("{}", static_users(names));
    Ok(())
}

fn set_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}
