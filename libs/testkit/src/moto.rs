use std::time::Duration;

use tempfile::TempDir;

use crate::ports::{PortLease, lease_port};
use crate::process::{ServerProcess, find_binary, http_status, retry_on_taken_port};

/// `moto_server`: an AWS API stand-in serving S3, ELBv2, WAFv2, IAM and EC2 on one port.
/// Credentials are ignored; use any access key and region `us-east-1`. State lives in the
/// process's memory, so a [`restart`](Self::restart) starts empty.
pub struct Moto {
    pub port: u16,
    server: ServerProcess,
    /// Held for the server's life, restarts included: the port stays its own.
    _lease: PortLease,
    _dir: TempDir,
}

impl Moto {
    pub async fn start() -> anyhow::Result<Self> {
        retry_on_taken_port(Self::start_once).await
    }

    async fn start_once() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let lease = lease_port();
        let port = lease.port();
        let args = vec!["-H".into(), "127.0.0.1".into(), "-p".into(), port.to_string()];
        let server =
            ServerProcess::spawn("moto_server", find_binary("moto_server")?, args, dir.path())?;
        let mut moto = Self { port, server, _lease: lease, _dir: dir };
        moto.wait_ready().await?;
        Ok(moto)
    }

    /// The endpoint URL to give AWS SDK clients (`AWS_ENDPOINT_URL`).
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// One EC2 query-API call (the network a test's load balancer needs: `CreateVpc`,
    /// `CreateSubnet`), answering the text of the response's first `<field>` element. moto
    /// routes by the service named in the credential scope and checks no signature, so the
    /// test needs no EC2 SDK to set the scene for the SDKs under test.
    pub async fn ec2(&self, params: &[(&str, &str)], field: &str) -> anyhow::Result<String> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut form = String::from("Version=2016-11-15");
        for (key, value) in params {
            form.push('&');
            form.push_str(&form_encode(key));
            form.push('=');
            form.push_str(&form_encode(value));
        }
        let auth = "AWS4-HMAC-SHA256 Credential=test/20250101/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=0";
        let request = format!(
            "POST / HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: {auth}\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
            form.len()
        );
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await?;
        stream.write_all(request.as_bytes()).await?;
        let mut body = String::new();
        stream.read_to_string(&mut body).await?;
        let open = format!("<{field}>");
        let start =
            body.find(&open).ok_or_else(|| anyhow::anyhow!("no {field} in {body}"))? + open.len();
        let end =
            body[start..].find('<').ok_or_else(|| anyhow::anyhow!("unclosed {field} in {body}"))?;
        Ok(body[start..start + end].to_owned())
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let port = self.port;
        self.server
            .wait_ready(Duration::from_secs(30), || async move {
                http_status(port, "/moto-api/").await.is_some()
            })
            .await
    }

    /// SIGKILL: connections are refused from now on.
    pub async fn kill(&mut self) {
        self.server.kill().await;
    }

    /// Starts the server again on the same port (after [`kill`](Self::kill)), with no state.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.server.restart()?;
        self.wait_ready().await
    }

    /// Freezes the server (SIGSTOP): connections are accepted by the kernel and never answered.
    pub fn pause(&self) -> anyhow::Result<()> {
        self.server.pause()
    }

    pub fn resume(&self) -> anyhow::Result<()> {
        self.server.resume()
    }

    pub fn process(&self) -> &ServerProcess {
        &self.server
    }
}

pub(crate) fn form_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
