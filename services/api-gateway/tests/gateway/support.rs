//! A real stack per test: `nats-server`, the embedded store in a temp dir, auth's gRPC server
//! and the gateway's HTTP server on free ports, driven with a real HTTP client.

use std::net::SocketAddr;

use base64::Engine;
use ramen_api_gateway::{RateLimits, Settings};
use ramen_clients::Signed;
use ramen_config::{Config, Secret};
use ramen_lifecycle::Shutdown;
use ramen_proto::auth::v1::auth_service_client::AuthServiceClient;
use ramen_proto::auth::v1::*;
use ramen_proto::metadata;
use ramen_service::Platform;
use ramen_testkit::Nats;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;

pub const PASSWORD: &str = "a long enough passphrase";
pub const JWT_SECRET: &str = "gateway-test-signing-key-long-enough-0123456789";

pub fn config(dir: &std::path::Path, redis_url: Option<&str>) -> Config {
    let any = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut config = Config { data_dir: dir.to_path_buf(), ..Config::default() };
    config.listen.auth = any;
    config.listen.api = any;
    config.listen.admin = any;
    config.auth.jwt_secret = Secret::new(JWT_SECRET);
    config.auth.secrets_key =
        Secret::new(base64::engine::general_purpose::STANDARD.encode([5u8; 32]));
    if let Some(url) = redis_url {
        config.redis.url = Secret::new(url);
    }
    config
}

/// How [`Stack`] starts.
#[derive(Default)]
struct Setup<'a> {
    limits: RateLimits,
    redis_url: Option<&'a str>,
    /// Every service, not only auth.
    full: bool,
    /// Loopback is a trusted proxy.
    proxied: bool,
}

pub struct Stack {
    pub api: SocketAddr,
    pub auth_addr: SocketAddr,
    /// Auth itself, for what no route writes (call records come from nodes over the bus).
    pub auth: ramen_auth::Auth,
    pub platform: Platform,
    pub http: reqwest::Client,
    pub nats: Nats,
    pub _dir: TempDir,
}

/// An HTTP answer: status, headers and JSON body (Null when empty).
pub struct Answer {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Answer {
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or_default()
    }
}

impl Stack {
    pub async fn start() -> Stack {
        Self::start_with(RateLimits::default(), None).await
    }

    pub async fn start_with(limits: RateLimits, redis_url: Option<&str>) -> Stack {
        Self::start_services(Setup { limits, redis_url, ..Setup::default() }).await
    }

    /// Behind a trusted proxy on loopback: each request names its client in `X-Forwarded-For`.
    pub async fn start_proxied(limits: RateLimits) -> Stack {
        Self::start_services(Setup { limits, proxied: true, ..Setup::default() }).await
    }

    /// Every service, as `ramen up` runs them: the domain routes reach real backends.
    pub async fn start_full() -> Stack {
        Self::start_services(Setup { full: true, ..Setup::default() }).await
    }

    /// A gateway that believes `X-Forwarded-For` from 127.0.0.1, as behind a load balancer.
    pub async fn start_behind_proxy() -> Stack {
        Self::start_proxied(RateLimits::default()).await
    }

    async fn start_services(setup: Setup<'_>) -> Stack {
        let Setup { limits, redis_url, full, proxied } = setup;
        let nats = Nats::start().await.expect("nats-server");
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(dir.path(), redis_url);
        if full {
            // Known ports: the services find each other from the listen addresses.
            let free = || SocketAddr::from(([127, 0, 0, 1], ramen_testkit::free_port()));
            config.listen.auth = free();
            config.listen.deployer = free();
            config.listen.zone_manager = free();
            config.listen.rebalancer = free();
        }
        let platform =
            Platform::open(config.clone(), &nats.url(), Shutdown::new()).await.expect("platform");
        let auth = ramen_auth::launch(platform.clone()).await.expect("auth");
        if full {
            ramen_zone_manager::start(platform.clone()).await.expect("zone-manager");
            ramen_deployer::start(platform.clone()).await.expect("deployer");
            ramen_rebalancer::start(platform.clone()).await.expect("rebalancer");
        }
        let mut settings = Settings::from_config(&config).unwrap();
        settings.auth_endpoint = format!("http://{}", auth.running.addr);
        settings.limits = limits;
        settings.key_use_report_every = std::time::Duration::from_millis(200);
        if proxied {
            settings.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()];
        }
        let running =
            ramen_api_gateway::start_with(platform.clone(), settings).await.expect("gateway");
        let http =
            reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        let stack = Stack {
            api: running.addr,
            auth_addr: auth.running.addr,
            auth: auth.auth.clone(),
            platform,
            http,
            nats,
            _dir: dir,
        };
        if let Some(admin) = auth.bootstrap {
            stack.retire_bootstrap(&admin.email, admin.one_time_password()).await;
        }
        stack
    }

    /// Another replica of auth and of the gateway over the same store and shared state (as a
    /// second pod of each would run); answers the new gateway's address.
    pub async fn replica(&self) -> SocketAddr {
        let auth = ramen_auth::launch(self.platform.clone()).await.expect("auth replica");
        let mut settings = Settings::from_config(&self.platform.config).unwrap();
        settings.auth_endpoint = format!("http://{}", auth.running.addr);
        let running = ramen_api_gateway::start_with(self.platform.clone(), settings)
            .await
            .expect("gateway replica");
        running.addr
    }

    /// Sets a real password on the bootstrap admin, so it is an ordinary super admin.
    async fn retire_bootstrap(&self, email: &str, otp: &str) {
        let session = self.login(email, otp).await;
        let token = session.body["access_token"].as_str().unwrap().to_owned();
        let change = json!({ "current_password": otp, "new_password": PASSWORD });
        let changed =
            self.call(Method::POST, "/api/auth/password", Some(&token), Some(change)).await;
        assert_eq!(changed.status, 200, "{}", changed.body);
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.api)
    }

    pub async fn send(&self, request: reqwest::RequestBuilder) -> Answer {
        let response = request.send().await.expect("the gateway answers");
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.unwrap();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        Answer { status, headers, body }
    }

    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Answer {
        let mut request = self.http.request(method, self.url(path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        self.send(request).await
    }

    pub async fn login(&self, email: &str, password: &str) -> Answer {
        let body = json!({ "email": email, "password": password });
        self.call(Method::POST, "/api/auth/login", None, Some(body)).await
    }

    /// Signs in and returns the access token.
    pub async fn token(&self, email: &str) -> String {
        let answer = self.login(email, PASSWORD).await;
        assert_eq!(answer.status, 200, "login {email}: {}", answer.body);
        answer.body["access_token"].as_str().unwrap().to_owned()
    }

    pub async fn grpc(&self) -> AuthServiceClient<Signed> {
        let url = format!("http://{}", self.auth_addr);
        AuthServiceClient::new(
            ramen_clients::connect_lazy(
                &url,
                None,
                self.platform.tickets.clone(),
                ramen_access::audience::AUTH,
            )
            .unwrap(),
        )
    }

    /// Setup through auth directly, as the control plane (`deployer`) would.
    pub async fn user(&self, email: &str, super_admin: bool) -> String {
        let request =
            CreateUserRequest { email: email.into(), password: PASSWORD.into(), super_admin };
        self.grpc()
            .await
            .create_user(as_service(request))
            .await
            .unwrap()
            .into_inner()
            .user
            .unwrap()
            .id
    }

    /// The id of the user with `email`, asked of auth as the control plane.
    pub async fn user_id(&self, email: &str) -> String {
        let request = ListUsersRequest { email_prefix: email.into(), ..Default::default() };
        let users = self.grpc().await.list_users(as_service(request)).await.unwrap().into_inner();
        users.users.into_iter().find(|u| u.email == email).expect("the user exists").id
    }

    pub async fn group(&self, group: &str) {
        self.grpc()
            .await
            .register_group(as_service(RegisterGroupRequest { group: group.into() }))
            .await
            .unwrap();
    }

    pub async fn member(&self, group: &str, user_id: &str, role: Role) {
        let request = AddMemberRequest {
            group: group.into(),
            user_id: user_id.into(),
            email: String::new(),
            role: role as i32,
        };
        self.grpc().await.add_member(as_service(request)).await.unwrap();
    }
}

pub fn as_service<T>(message: T) -> tonic::Request<T> {
    ramen_access::Caller::acting_as(metadata::ACTOR_DEPLOYER).request(message)
}
