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
    let config = kube::Config::infer()
        .await
        .map_err(|e| crate::Error::Connect(e.to_string()))?;
    Ok(kube::client::ClientBuilder::try_from(config)
        .map_err(|e| crate::Error::Connect(e.to_string()))?
        .with_layer(&AnswerDeadline(deadline))
        .build())
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
