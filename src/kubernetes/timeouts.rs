//! A deadline on every answer of the API server: kube's client waits forever by
//! default (its read timeout is off, so exec sessions and watches can last), so a
//! half-open connection held a reconcile, and the controller slot it runs in, for as
//! long as the connection lived. The deadline covers the answer's head only: a watch
//! or an exec session streams on afterwards, as long as it likes.

use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use http::Request;
use tower::{Layer, Service};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How long the API server may take to start its answer (a list of thousands of
/// objects starts well within it).
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(30);

/// A client of the cluster kube's configuration names (in a pod, its ServiceAccount),
/// with `deadline` on every answer. Every process of ours but the operator (which adds
/// layers of its own) builds its client here: an API server that has just restarted
/// can hold a request for its own 60 s timeout, and a shim stuck on one reported
/// nothing and took no input for that minute.
pub async fn client(deadline: Duration) -> crate::Result<kube::Client> {
    let config = config().await?;
    Ok(kube::client::ClientBuilder::try_from(config)
        .map_err(|e| crate::Error::Connect(e.to_string()))?
        .with_layer(&AnswerDeadline(deadline))
        .build())
}

/// The kubeconfig and context a person named on the command line (kubectl's
/// `--kubeconfig` and `--context`), which every client of the process then uses.
#[derive(Debug, Clone, Default)]
pub struct KubeconfigChoice {
    pub kubeconfig: Option<std::path::PathBuf>,
    pub context: Option<String>,
}

static KUBECONFIG: std::sync::OnceLock<KubeconfigChoice> = std::sync::OnceLock::new();

impl KubeconfigChoice {
    /// Makes this the choice of every client built afterwards; nothing named keeps
    /// kube's own inference (KUBECONFIG, ~/.kube/config, in a pod its ServiceAccount).
    pub fn choose(self) {
        if self.kubeconfig.is_some() || self.context.is_some() {
            let _ = KUBECONFIG.set(self);
        }
    }

    async fn config(&self) -> crate::Result<kube::Config> {
        let options = kube::config::KubeConfigOptions {
            context: self.context.clone(),
            ..Default::default()
        };
        let connect = |e: kube::config::KubeconfigError| crate::Error::Connect(e.to_string());
        match &self.kubeconfig {
            Some(path) => {
                let file = kube::config::Kubeconfig::read_from(path).map_err(connect)?;
                kube::Config::from_custom_kubeconfig(file, &options).await
            }
            None => kube::Config::from_kubeconfig(&options).await,
        }
        .map_err(connect)
    }

    /// The same choice as kubectl's flags, for a kubectl this process runs.
    pub fn kubectl_args() -> Vec<String> {
        let Some(chosen) = KUBECONFIG.get() else {
            return Vec::new();
        };
        let mut args = Vec::new();
        if let Some(path) = &chosen.kubeconfig {
            args.push(format!("--kubeconfig={}", path.display()));
        }
        if let Some(context) = &chosen.context {
            args.push(format!("--context={context}"));
        }
        args
    }
}

/// The configuration of the cluster to talk to: the person's `--kubeconfig` and
/// `--context`, else kube's inference.
pub async fn config() -> crate::Result<kube::Config> {
    match KUBECONFIG.get() {
        Some(chosen) => chosen.config().await,
        None => kube::Config::infer()
            .await
            .map_err(|e| crate::Error::Connect(e.to_string())),
    }
}

#[derive(Clone, Copy)]
pub struct AnswerDeadline(pub Duration);

impl<S> Layer<S> for AnswerDeadline {
    type Service = WithDeadline<S>;

    fn layer(&self, inner: S) -> WithDeadline<S> {
        WithDeadline {
            inner,
            deadline: self.0,
        }
    }
}

#[derive(Clone)]
pub struct WithDeadline<S> {
    inner: S,
    deadline: Duration,
}

impl<S, B> Service<Request<B>> for WithDeadline<S>
where
    S: Service<Request<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<S::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let answer = self.inner.call(request);
        let deadline = self.deadline;
        Box::pin(async move {
            match tokio::time::timeout(deadline, answer).await {
                Ok(answered) => answered.map_err(Into::into),
                Err(_) => Err(format!("the API server did not answer within {deadline:?}").into()),
            }
        })
    }
}
