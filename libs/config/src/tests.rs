use figment::Jail;

use super::*;

fn load(jail: &Jail) -> Result<Config, ConfigError> {
    Config::from_figment(Config::figment(Some(&jail.directory().join("ramen.toml"))))
}

#[test]
fn shipped_defaults_validate() {
    Jail::expect_with(|jail| {
        jail.set_env("RAMEN_DATA_DIR", jail.directory().join("data").display());
        let config = load(jail).expect("defaults must validate");
        assert_eq!(config.mode, Mode::Local);
        assert_eq!(config.nats.stream, "RAMEN_JOBS");
        assert_eq!(config.endpoint(ServiceName::Auth), "http://127.0.0.1:7101");
        Ok(())
    });
}

#[test]
fn layers_file_then_env_with_aliases_and_nesting() {
    Jail::expect_with(|jail| {
        jail.set_env("RAMEN_DATA_DIR", jail.directory().join("data").display());
        jail.create_file(
            "ramen.toml",
            "[nats]\nmax_deliver = 3\nack_wait = \"5s\"\n[log]\nformat = \"json\"\n",
        )?;
        jail.set_env("RAMEN_NATS__MAX_DELIVER", "5");
        jail.set_env("RAMEN_NATS_URL", "nats://example:4222");
        jail.set_env("RAMEN_REDIS_SENTINEL_ADDRS", "a:26379, b:26379");
        jail.set_env("RAMEN_REDIS_MASTER_NAME", "mymaster");
        let config = load(jail).unwrap();
        assert_eq!(config.nats.max_deliver, 5, "env beats file");
        assert_eq!(config.nats.ack_wait, std::time::Duration::from_secs(5), "file beats defaults");
        assert_eq!(config.log.format, LogFormat::Json);
        assert_eq!(config.nats.url, "nats://example:4222");
        assert_eq!(config.redis.sentinels(), vec!["a:26379", "b:26379"]);
        assert_eq!(config.drain.linger, std::time::Duration::from_secs(3), "the default linger");
        jail.set_env("RAMEN_DRAIN_LINGER", "20s");
        assert_eq!(load(jail).unwrap().drain.linger, std::time::Duration::from_secs(20));
        Ok(())
    });
}

#[test]
fn invalid_value_names_the_key() {
    Jail::expect_with(|jail| {
        jail.set_env("RAMEN_DATA_DIR", jail.directory().join("data").display());
        jail.set_env("RAMEN_NATS__MAX_DELIVER", "0");
        let err = load(jail).unwrap_err().to_string();
        assert!(err.contains("nats.max_deliver"), "{err}");

        jail.set_env("RAMEN_NATS__MAX_DELIVER", "lots");
        let err = load(jail).unwrap_err().to_string();
        assert!(err.contains("nats.max_deliver"), "{err}");

        jail.set_env("RAMEN_NATS__MAX_DELIVER", "3");
        jail.set_env("RAMEN_LISTEN__AUTH", "127.0.0.1:8080");
        let err = load(jail).unwrap_err().to_string();
        assert!(err.contains("listen.auth") && err.contains("listen.api"), "{err}");
        Ok(())
    });
}

#[test]
fn cloud_mode_names_every_missing_variable() {
    Jail::expect_with(|jail| {
        jail.set_env("RAMEN_MODE", "cloud");
        let err = load(jail).unwrap_err().to_string();
        for var in ["RAMEN_JWT_SECRET", "RAMEN_SECRETS_KEY", "RAMEN_NATS_URL"] {
            assert!(err.contains(var), "{var} not named in: {err}");
        }

        jail.set_env("RAMEN_JWT_SECRET", "too-short");
        jail.set_env("RAMEN_SECRETS_KEY", "c2l4dGVlbiBieXRlcyEhIQ=="); // 16 bytes
        jail.set_env("RAMEN_NATS_URL", "nats://n:4222");
        // Since #27 a complete cloud config also names the service's NATS user.
        jail.set_env("RAMEN_NATS_CREDS", "/etc/ramen/nats/auth.creds");
        let err = load(jail).unwrap_err().to_string();
        assert!(err.contains("RAMEN_JWT_SECRET is 9 bytes"), "{err}");
        assert!(err.contains("RAMEN_SECRETS_KEY decodes to 16 bytes"), "{err}");
        assert!(!err.contains("RAMEN_NATS_URL"), "{err}");

        jail.set_env("RAMEN_JWT_SECRET", "0123456789abcdef0123456789abcdef");
        jail.set_env("RAMEN_SECRETS_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=");
        let config = load(jail).expect("complete cloud config");
        let err =
            config.require_cloud(&[Requirement::Mongo, Requirement::S3]).unwrap_err().to_string();
        assert!(err.contains("RAMEN_MONGO_URI") && err.contains("RAMEN_S3_BUCKET"), "{err}");
        assert_eq!(decode_secrets_key(&config.auth.secrets_key).unwrap().len(), 32);
        Ok(())
    });
}

#[test]
fn cloud_mode_refuses_a_bus_without_credentials() {
    Jail::expect_with(|jail| {
        jail.set_env("RAMEN_MODE", "cloud");
        jail.set_env("RAMEN_JWT_SECRET", "0123456789abcdef0123456789abcdef");
        jail.set_env("RAMEN_SECRETS_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=");
        jail.set_env("RAMEN_NATS_URL", "nats://n:4222");
        let err = load(jail).unwrap_err().to_string();
        assert!(err.contains("RAMEN_NATS_CREDS"), "{err}");

        // A user and password in the URL is an operator's static configuration: accepted.
        jail.set_env("RAMEN_NATS_URL", "nats://ramen:s3cret@n:4222");
        let config = load(jail).expect("user and password in the URL");
        assert_eq!(config.nats.url_without_userinfo(), "nats://n:4222");
        assert!(config.require_cloud(&[Requirement::NatsSigningKey]).is_ok());

        // Operator mode: the zone-manager also needs the node signing key.
        jail.set_env("RAMEN_NATS_URL", "nats://n:4222,nats://m:4222");
        jail.set_env("RAMEN_NATS_CREDS", "/etc/ramen/nats/zone-manager.creds");
        let config = load(jail).expect("credentials given");
        assert_eq!(config.nats.url_without_userinfo(), "nats://n:4222,nats://m:4222");
        let err = config.require_cloud(&[Requirement::NatsSigningKey]).unwrap_err().to_string();
        assert!(err.contains("RAMEN_NATS_SIGNING_KEY"), "{err}");
        jail.set_env("RAMEN_NATS_SIGNING_KEY", "SAAB");
        let config = load(jail).unwrap();
        assert!(config.require_cloud(&[Requirement::NatsSigningKey]).is_ok());
        assert!(!format!("{config:?}").contains("zone-manager.creds"), "credentials are redacted");
        Ok(())
    });
}

#[test]
fn local_mode_generates_keys_once_with_private_permissions() {
    use std::os::unix::fs::PermissionsExt;
    Jail::expect_with(|jail| {
        let data = jail.directory().join("data");
        jail.set_env("RAMEN_DATA_DIR", data.display());
        let first = load(jail).unwrap();
        let second = load(jail).unwrap();
        assert_eq!(first.auth.jwt_secret, second.auth.jwt_secret, "keys survive a restart");
        assert_eq!(decode_secrets_key(&first.auth.secrets_key).unwrap().len(), 32);
        let mode = std::fs::metadata(data.join("keys/secrets.key")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        Ok(())
    });
}

#[test]
fn secrets_never_print() {
    let secret = Secret::new("hunter2-hunter2-hunter2-hunter2-hunter2");
    assert!(!format!("{secret:?}").contains("hunter2"));
    let mut config = Config::default();
    config.auth.jwt_secret = secret;
    let dump = format!("{config:?}");
    assert!(!dump.contains("hunter2"));
}

/// Set through the figment, not the process environment: other tests read the environment
/// concurrently (the property test below does not take Jail's lock).
#[test]
fn sso_settings_are_checked_and_name_their_key() {
    let dir = tempfile::tempdir().unwrap();
    let load = |pairs: &[(&str, &str)]| {
        let mut figment =
            Config::figment(None).merge(("data_dir", dir.path().display().to_string()));
        for (key, value) in pairs {
            figment = match value.parse::<bool>() {
                Ok(flag) => figment.merge((*key, flag)),
                Err(_) => figment.merge((*key, *value)),
            };
        }
        Config::from_figment(figment)
    };
    let err = load(&[("sso.password_sign_in", "false")]).unwrap_err().to_string();
    assert!(err.contains("sso.password_sign_in") && err.contains("sso.issuer"), "{err}");

    let mut pairs = vec![("sso.password_sign_in", "false"), ("sso.issuer", "https://idp.example")];
    let err = load(&pairs).unwrap_err().to_string();
    assert!(err.contains("sso.client_id"), "{err}");

    pairs.push(("sso.client_id", "ramen"));
    pairs.push(("sso.memberships", "devs=payments:admin, ops=payments:owner"));
    let err = load(&pairs).unwrap_err().to_string();
    assert!(err.contains("sso.memberships") && err.contains("ops=payments:owner"), "{err}");

    pairs.push(("sso.memberships", "devs=payments:admin, Payments.Viewer=payments:member"));
    let config = load(&pairs).unwrap();
    let memberships = config.sso.memberships().unwrap();
    assert_eq!(memberships[1].provider_group, "Payments.Viewer");
    assert_eq!(
        (memberships[0].group.as_str(), memberships[0].role.as_str()),
        ("payments", "admin")
    );
    assert_eq!(config.sso.scopes(), vec!["openid", "email", "profile"]);
    assert!(!config.sso.password_sign_in);
    let api = "0.0.0.0:7100".parse().unwrap();
    assert_eq!(config.sso.redirect_uri(api), "http://127.0.0.1:7100/api/auth/sso/callback");

    pairs.push(("sso.public_url", "ramen.example.com"));
    let err = load(&pairs).unwrap_err().to_string();
    assert!(err.contains("sso.public_url"), "{err}");
}

mod reference_page {
    use figment::value::UncasedStr;

    use crate::reference;

    const BEGIN: &str = "<!-- config-reference: generated -->\n";
    const END: &str = "<!-- config-reference: end -->";

    #[test]
    fn every_key_is_described_and_no_description_is_stale() {
        let undescribed: Vec<String> = reference::variables()
            .into_iter()
            .filter(|v| v.about.is_empty())
            .map(|v| v.key)
            .collect();
        assert!(undescribed.is_empty(), "describe these keys in reference.rs: {undescribed:?}");
        assert_eq!(
            reference::stale_descriptions(),
            Vec::<&str>::new(),
            "keys no longer in the model"
        );
    }

    #[test]
    fn every_documented_variable_sets_its_key() {
        for v in reference::variables() {
            let name = v.env.strip_prefix("RAMEN_").unwrap();
            let key = crate::env::map_key(UncasedStr::new(name));
            assert_eq!(key.as_str(), v.key, "{} must set {}", v.env, v.key);
        }
    }

    #[test]
    fn docs_configuration_md_is_the_generated_table() {
        // The running test's CARGO_MANIFEST_DIR, not the compiled-in one (a target directory
        // shared by two checkouts may hold this test built in the other).
        let manifest = std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_owned());
        let path = std::path::Path::new(&manifest).join("../../docs/configuration.md");
        let page = std::fs::read_to_string(path).unwrap();
        let start = page.find(BEGIN).expect("the begin marker") + BEGIN.len();
        let end = page.find(END).expect("the end marker");
        assert!(
            page[start..end] == reference::markdown_table(),
            "docs/configuration.md is out of date: replace the table between its markers with \
             the output of `cargo run -q -p ramen-config --example config-reference`"
        );
    }
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    /// Keys of every kind of value: durations, addresses, counts, enums, lists, URLs.
    const KEYS: [&str; 11] = [
        "nats.ack_wait",
        "listen.admin",
        "nats.max_deliver",
        "mode",
        "drain.timeout",
        "drain.mode",
        "drain.linger",
        "zone.max_worker_count",
        "log.format",
        "zone.trusted_proxies",
        "redis.url",
    ];

    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            "[0-9]{1,12}(ms|s|m|h)?",
            "[0-9.:\\[\\]a-f]{1,24}",
            Just(String::new()),
            Just("-1".to_owned()),
            Just("18446744073709551616".to_owned()),
        ]
    }

    /// The property is not vacuous: these are refused, each naming its key.
    #[test]
    fn bad_values_are_refused_by_key() {
        let dir = tempfile::tempdir().unwrap();
        for (key, value) in [("nats.ack_wait", "soon"), ("listen.admin", "here"), ("mode", "both")]
        {
            let figment = Config::figment(None)
                .merge(("data_dir", dir.path().display().to_string()))
                .merge((key, value));
            let err = Config::from_figment(figment).unwrap_err().to_string();
            assert!(err.contains(key), "{key}: {err}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Any value for any key: no panic, and a refusal names the key it refuses.
        #[test]
        fn any_value_is_judged_and_a_refusal_names_its_key(key in 0..KEYS.len(), value in value()) {
            let dir = tempfile::tempdir().unwrap();
            let key = KEYS[key];
            let figment = Config::figment(None)
                .merge(("data_dir", dir.path().display().to_string()))
                .merge((key, value.clone()));
            if let Err(err) = Config::from_figment(figment) {
                let text = err.to_string();
                prop_assert!(text.contains(key), "{key} = {value:?}: {text}");
            }
        }
    }
}
