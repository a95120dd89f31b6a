//! A real headless browser for the console's tests: Debian's chromium driven through
//! chromedriver's W3C WebDriver protocol (JSON over HTTP), with a client small enough
//! to read. `hack/testenv/packages.sh` installs both; a test without them fails and
//! says so.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

/// The key under which WebDriver names an element.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver and one browser session of it; both end when dropped.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    /// Chromium's profile folder, removed when the browser ends.
    profile: std::path::PathBuf,
    http: Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
}

impl Browser {
    /// Starts chromedriver and a headless chromium with a fresh profile.
    pub async fn start() -> Browser {
        let driver_path = which("chromedriver");
        let chromium = which("chromium");
        let port = super::cluster::free_port();
        let driver = Command::new(&driver_path)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let http = Client::builder(TokioExecutor::new()).build_http();
        let mut browser = Browser {
            driver,
            base: format!("http://127.0.0.1:{port}"),
            session: String::new(),
            profile: std::env::temp_dir().join(format!("overseer-chromium-{port}")),
            http,
        };
        let started = Instant::now();
        while browser.call("GET", "/status", None).await.is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "chromedriver did not answer in 20 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // The flags keep chromium off the network it would otherwise reach for at start.
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "unhandledPromptBehavior": "accept",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                         "--no-first-run", "--disable-background-networking",
                         "--disable-component-update", "--disable-sync",
                         "--disable-dev-shm-usage", "--window-size=1280,900",
                         format!("--user-data-dir={}", browser.profile.display())],
            },
        }}});
        let answer = browser
            .call("POST", "/session", Some(capabilities))
            .await
            .expect("a browser session");
        browser.session = answer["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string();
        browser
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let request = hyper::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(
                body.map(|b| b.to_string()).unwrap_or_default(),
            )))
            .map_err(|e| e.to_string())?;
        let response = self
            .http
            .request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
        match status.is_success() {
            true => Ok(value["value"].clone()),
            false => Err(format!("{method} {path}: {status} {}", value["value"])),
        }
    }

    async fn session_call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}{path}", self.session);
        self.call(method, &path, body)
            .await
            .unwrap_or_else(|e| panic!("webdriver: {e}"))
    }

    pub async fn goto(&self, url: &str) {
        self.session_call("POST", "/url", Some(json!({"url": url})))
            .await;
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page.
    pub async fn run(&self, script: &str, args: Value) -> Value {
        self.session_call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
        .await
    }

    /// The page's visible text.
    pub async fn text(&self) -> String {
        self.run("return document.body.innerText;", json!([]))
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Waits until the page's text holds `needle`; returns how long it took.
    pub async fn wait_for_text(&self, needle: &str, timeout: Duration) -> Duration {
        let started = Instant::now();
        loop {
            if self.text().await.contains(needle) {
                return started.elapsed();
            }
            assert!(
                started.elapsed() < timeout,
                "the page did not show {needle:?} within {timeout:?}; it shows:\n{}",
                self.text().await
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The element `css` selects (the first).
    pub async fn find(&self, css: &str) -> String {
        let found = self
            .session_call(
                "POST",
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        found[ELEMENT].as_str().expect("an element").to_string()
    }

    pub async fn click(&self, css: &str) {
        let element = self.find(css).await;
        self.session_call(
            "POST",
            &format!("/element/{element}/click"),
            Some(json!({})),
        )
        .await;
    }

    /// Types `text` into the field `css` selects, after clearing it.
    pub async fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css).await;
        self.session_call(
            "POST",
            &format!("/element/{element}/clear"),
            Some(json!({})),
        )
        .await;
        self.send_keys(css, text).await;
    }

    /// Sends `keys` to the element `css` selects, as typed (WebDriver's key codes: Enter
    /// is "\u{E007}").
    pub async fn send_keys(&self, css: &str, keys: &str) {
        let element = self.find(css).await;
        self.session_call(
            "POST",
            &format!("/element/{element}/value"),
            Some(json!({"text": keys})),
        )
        .await;
    }

    /// Saves a PNG of the page to `path`.
    pub async fn screenshot(&self, path: &std::path::Path) {
        use base64_png::decode;
        let png = self.session_call("GET", "/screenshot", None).await;
        let bytes = decode(png.as_str().expect("a screenshot"));
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, bytes).expect("write the screenshot");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Ends the session (its chromium with it) before the driver goes.
        use std::io::{Read, Write};
        let address = self.base.trim_start_matches("http://");
        if let Ok(mut stream) = std::net::TcpStream::connect(address) {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
            let _ = write!(
                stream,
                "DELETE /session/{} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n",
                self.session
            );
            let _ = stream.read_to_end(&mut Vec::new());
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Where the pages' screenshots go: docs/images when OVERSEER_SCREENSHOTS names it (to
/// refresh the docs' pictures), else target/console-screenshots.
pub fn screenshot_path(page: &str) -> std::path::PathBuf {
    let dir = std::env::var("OVERSEER_SCREENSHOTS")
        .unwrap_or_else(|_| "target/console-screenshots".into());
    super::cluster::repo_root()
        .join(dir)
        .join(format!("console-{page}.png"))
}

/// The path of `tool`, or a failure that says how to get it.
fn which(tool: &str) -> String {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .expect("run sh");
    let path = String::from_utf8_lossy(&found.stdout).trim().to_string();
    assert!(
        !path.is_empty(),
        "{tool} is not installed: the console's browser tests need Debian's chromium and chromium-driver (bash hack/testenv/packages.sh installs them)"
    );
    path
}

/// Base64 as WebDriver sends screenshots (standard alphabet, padded).
mod base64_png {
    pub fn decode(text: &str) -> Vec<u8> {
        let value = |c: u8| match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        };
        let clean: Vec<u8> = text.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
        let mut out = Vec::with_capacity(clean.len() * 3 / 4);
        for chunk in clean.chunks(4) {
            let digits: Vec<u8> = chunk
                .iter()
                .filter(|c| **c != b'=')
                .map(|c| value(*c))
                .collect();
            let n = digits
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, d)| n | (u32::from(*d) << (18 - 6 * i)));
            for i in 0..digits.len().saturating_sub(1) {
                out.push((n >> (16 - 8 * i)) as u8);
            }
        }
        out
    }
}

/// `overseer -n NS ui` as a subprocess (as `user`, impersonated, when given); killed
/// when dropped.
pub struct Console {
    pub child: Child,
    pub url: String,
}

impl Console {
    pub async fn start(ns: &super::cluster::TestNamespace, user: Option<&str>) -> Console {
        let port = super::cluster::free_port();
        let mut command = Command::new(env!("CARGO_BIN_EXE_overseer"));
        command
            .args([
                "-n",
                &ns.name,
                "ui",
                "--no-open",
                "--port",
                &port.to_string(),
            ])
            .env("KUBECONFIG", super::cluster::kubeconfig_path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(user) = user {
            command.env("KUBE_RS_DEBUG_IMPERSONATE_USER", user);
        }
        let child = command.spawn().expect("start overseer ui");
        let started = Instant::now();
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "overseer ui did not listen in 20 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Console {
            child,
            url: format!("http://127.0.0.1:{port}/"),
        }
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
