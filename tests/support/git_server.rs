//! A git server over HTTPS for the e2e tests, as a team's own server would be: git's
//! smart HTTP protocol served by `git http-backend` (git's own CGI program) behind a TLS
//! listener whose certificate a private CA, made here with openssl, signs. Pods trust
//! it through `GIT_SSL_CAINFO`, as they would a company's CA.

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct GitServer {
    /// `https://ADDRESS:PORT`; a repository `NAME` is `{url}/NAME.git`.
    pub url: String,
    /// The CA that signed the server's certificate (PEM).
    pub ca_pem: String,
    root: PathBuf,
}

fn run(command: &mut Command) {
    let output = command.output().expect("start command");
    assert!(
        output.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A CA and a server certificate for `address`, signed by it, in `dir`.
fn certificates(dir: &Path, address: IpAddr) {
    let openssl = |args: &[&str]| run(Command::new("openssl").current_dir(dir).args(args));
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=overseer e2e git CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=git",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
    ]);
    std::fs::write(
        dir.join("san.ext"),
        format!("subjectAltName=IP:{address}\nextendedKeyUsage=serverAuth\n"),
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        "san.ext",
        "-out",
        "server.crt",
    ]);
}

impl GitServer {
    /// Serves the bare repositories of a new directory on a free port of `address`.
    pub async fn start(address: IpAddr) -> GitServer {
        let root = std::env::temp_dir().join(format!(
            "overseer-git-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let pki = root.join("pki");
        std::fs::create_dir_all(&pki).unwrap();
        certificates(&pki, address);
        let acceptor = super::tls::acceptor(&pki.join("server.crt"), &pki.join("server.key"));
        let listener = tokio::net::TcpListener::bind(SocketAddr::new(address, 0))
            .await
            .unwrap();
        let url = format!("https://{}", listener.local_addr().unwrap());
        let repos = root.join("repos");
        std::fs::create_dir_all(&repos).unwrap();
        let served = repos.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let repos = served.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |request| {
                        let repos = repos.clone();
                        async move { Ok::<_, std::convert::Infallible>(backend(&repos, request).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        let ca_pem = std::fs::read_to_string(pki.join("ca.crt")).unwrap();
        GitServer { url, ca_pem, root }
    }

    /// A bare repository `name` holding one commit of `files` on `main`, open to pushes.
    pub fn repository(&self, name: &str, files: &[(&str, &str)]) -> String {
        let work = self.root.join("seed").join(name);
        std::fs::create_dir_all(&work).unwrap();
        let git = |dir: &Path, args: &[&str]| run(Command::new("git").current_dir(dir).args(args));
        git(&work, &["init", "--quiet", "--initial-branch", "main"]);
        for (path, text) in files {
            std::fs::write(work.join(path), text).unwrap();
        }
        git(&work, &["add", "."]);
        git(
            &work,
            &[
                "-c",
                "user.name=e2e",
                "-c",
                "user.email=e2e@example.com",
                "commit",
                "--quiet",
                "-m",
                "Start",
            ],
        );
        let bare = self.bare(name);
        git(
            &self.root,
            &[
                "clone",
                "--quiet",
                "--bare",
                work.to_str().unwrap(),
                bare.to_str().unwrap(),
            ],
        );
        // Pushes over HTTP come without a user here: allow them, as an authenticated
        // server would for its users.
        git(&bare, &["config", "http.receivepack", "true"]);
        format!("{}/{name}.git", self.url)
    }

    /// `git log --format=%s -1 BRANCH` of repository `name`: the subject of its last commit.
    pub fn last_subject(&self, name: &str, branch: &str) -> Option<String> {
        let output = Command::new("git")
            .arg("--git-dir")
            .arg(self.bare(name))
            .args(["log", "--format=%s", "-1", branch])
            .output()
            .ok()?;
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
    }

    /// The files at the top of `branch` of repository `name` (`git ls-tree --name-only`).
    pub fn files(&self, name: &str, branch: &str) -> Vec<String> {
        let output = Command::new("git")
            .arg("--git-dir")
            .arg(self.bare(name))
            .args(["ls-tree", "--name-only", branch])
            .output()
            .expect("git ls-tree");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Makes the pods of `ns` trust the server: the Secret `git-ca` holding its CA, and
    /// the pod template that mounts it and points git at it (`GIT_SSL_CAINFO`), to
    /// which a test adds what else its pods need.
    pub async fn trusted_in(&self, ns: &super::cluster::TestNamespace) -> serde_json::Value {
        super::cluster::create_object::<k8s_openapi::api::core::v1::Secret>(
            ns,
            serde_json::json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "git-ca"},
                               "stringData": {"ca.crt": self.ca_pem}}),
        )
        .await;
        serde_json::json!({
            "env": [{"name": "GIT_SSL_CAINFO", "value": "/etc/git-ca/ca.crt"}],
            "volumes": [{"name": "git-ca", "secret": {"secretName": "git-ca"}}],
            "volumeMounts": [{"name": "git-ca", "mountPath": "/etc/git-ca", "readOnly": true}]
        })
    }

    fn bare(&self, name: &str) -> PathBuf {
        self.root.join("repos").join(format!("{name}.git"))
    }
}

/// One request through `git http-backend`: the CGI variables from the request, its
/// body on stdin, the headers and body of its output as the response.
async fn backend(repos: &Path, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let mut child = tokio::process::Command::new("git")
        .arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", repos)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", parts.method.as_str())
        .env("PATH_INFO", parts.uri.path())
        .env("QUERY_STRING", parts.uri.query().unwrap_or_default())
        .env("CONTENT_TYPE", header("content-type"))
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", header("content-encoding"))
        .env("GIT_PROTOCOL", header("git-protocol"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("git http-backend");
    let mut stdin = child.stdin.take().unwrap();
    let feed = async move {
        use tokio::io::AsyncWriteExt;
        let _ = stdin.write_all(&body).await;
    };
    let (_, output) = tokio::join!(feed, child.wait_with_output());
    let output = output.expect("git http-backend's output").stdout;
    let split = output
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| (at, 4))
        .or_else(|| {
            output
                .windows(2)
                .position(|w| w == b"\n\n")
                .map(|at| (at, 2))
        });
    let Some((at, gap)) = split else {
        return Response::builder()
            .status(502)
            .body(Full::new(Bytes::from_static(
                b"git http-backend answered nothing\n",
            )))
            .unwrap();
    };
    let mut response = Response::builder();
    for line in String::from_utf8_lossy(&output[..at]).lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value.split_whitespace().next().unwrap_or("200");
            response = response.status(code.parse::<u16>().unwrap_or(500));
        } else {
            response = response.header(name, value);
        }
    }
    response
        .body(Full::new(Bytes::copy_from_slice(&output[at + gap..])))
        .unwrap()
}
