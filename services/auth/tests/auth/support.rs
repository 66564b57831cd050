//! One auth service per test: a real `nats-server`, the embedded store in a temp dir, and the
//! gRPC server on a free port, driven through a real gRPC client.

use std::net::SocketAddr;

use base64::Engine;
use ramen_access::Caller;
use ramen_auth::Started;
use ramen_clients::Signed;
use ramen_config::{Config, Secret};
use ramen_lifecycle::Shutdown;
use ramen_proto::auth::v1::auth_service_client::AuthServiceClient;
use ramen_proto::auth::v1::*;
use ramen_proto::metadata;
use ramen_service::Platform;
use ramen_testkit::Nats;
use tempfile::TempDir;

pub const PASSWORD: &str = "a long enough passphrase";
pub const KEY_A: [u8; 32] = [11; 32];
pub const DEPLOYER: &str = metadata::ACTOR_DEPLOYER;

pub fn config(dir: &std::path::Path, secrets_key: &[u8; 32]) -> Config {
    let mut config = Config { data_dir: dir.to_path_buf(), ..Config::default() };
    let any = SocketAddr::from(([127, 0, 0, 1], 0));
    config.listen.auth = any;
    config.listen.admin = any;
    config.auth.jwt_secret = Secret::new("test-signing-key-that-is-long-enough-0123456789");
    config.auth.secrets_key =
        Secret::new(base64::engine::general_purpose::STANDARD.encode(secrets_key));
    config
}

pub struct World {
    pub started: Started,
    pub platform: Platform,
    pub client: AuthServiceClient<Signed>,
    pub _nats: Nats,
    pub dir: TempDir,
}

impl World {
    pub async fn start() -> World {
        Self::start_with(|_| {}).await
    }

    /// With the test's own settings on top of [`config`].
    pub async fn start_with(change: impl FnOnce(&mut Config)) -> World {
        let nats = Nats::start().await.expect("nats-server");
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(dir.path(), &KEY_A);
        change(&mut config);
        let platform =
            Platform::open(config, &nats.url(), Shutdown::new()).await.expect("platform");
        let started = ramen_auth::launch(platform.clone()).await.expect("auth starts");
        let url = format!("http://{}", started.running.addr);
        let channel =
            ramen_clients::connect_lazy(&url, None, platform.tickets.clone(), "auth").unwrap();
        let client = AuthServiceClient::new(channel);
        World { started, platform, client, _nats: nats, dir }
    }

    pub fn client(&self) -> AuthServiceClient<Signed> {
        self.client.clone()
    }

    /// A user with a real password (created by a service actor), returning its id.
    pub async fn user(&self, email: &str, super_admin: bool) -> String {
        let request =
            CreateUserRequest { email: email.into(), password: PASSWORD.into(), super_admin };
        let created =
            self.client().create_user(as_actor(DEPLOYER, request)).await.expect("user created");
        created.into_inner().user.unwrap().id
    }

    pub async fn group(&self, group: &str) {
        let request = RegisterGroupRequest { group: group.into() };
        self.client().register_group(as_actor(DEPLOYER, request)).await.expect("group registered");
    }

    pub async fn member(&self, group: &str, user_id: &str, role: Role) {
        let request = AddMemberRequest {
            group: group.into(),
            user_id: user_id.into(),
            email: String::new(),
            role: role as i32,
        };
        self.client().add_member(as_actor(DEPLOYER, request)).await.expect("member added");
    }

    pub async fn login(&self, email: &str, password: &str) -> Result<LoginResponse, tonic::Status> {
        let request = LoginRequest {
            email: email.into(),
            password: password.into(),
            client_addr: "127.0.0.1".into(),
        };
        self.client().login(request).await.map(tonic::Response::into_inner)
    }
}

/// A request made on behalf of `actor` (what the api-gateway signs after verifying a token;
/// auth reads the actor's standing from its own store).
pub fn as_actor<T>(actor: &str, message: T) -> tonic::Request<T> {
    Caller::new(actor, "req-test").request(message)
}
