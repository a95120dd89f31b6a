//! A person's view into an agent's session: `overseer logs AGENT [-f]` streams what its
//! CLI shows (the pod's log, which the shim mirrors), and `overseer attach AGENT` is a
//! terminal in its tmux, to answer a prompt the agent waits on or to take over.

use futures::{AsyncBufReadExt, Stream, TryStreamExt};
use kube::ResourceExt;
use kube::api::LogParams;

use super::agent::current_pod;
use crate::api::RuntimeMode;
use crate::kinds::agent_pod::CONTAINER;
use crate::{Error, Result};

/// `overseer logs AGENT`: the log of its current pod, the last `tail` lines or all,
/// then, with `follow`, every new line until the pod ends or the person interrupts.
pub async fn logs(
    namespace: Option<&str>,
    agent: &str,
    follow: bool,
    tail: Option<i64>,
) -> Result<()> {
    use std::io::Write;
    let mut lines = std::pin::pin!(lines(namespace, agent, follow, tail).await?);
    let mut out = std::io::stdout().lock();
    while let Some(line) = lines.try_next().await? {
        writeln!(out, "{line}")?;
        out.flush()?;
    }
    Ok(())
}

/// The lines of the agent's current pod log (what `overseer logs` prints, and the
/// console's session view shows): the last `tail` or all, then with `follow` each new
/// one until the pod ends.
pub async fn lines(
    namespace: Option<&str>,
    agent: &str,
    follow: bool,
    tail: Option<i64>,
) -> Result<impl Stream<Item = Result<String>> + Send + use<>> {
    let (_, pods, pod) = current_pod(namespace, agent).await?;
    let params = LogParams {
        container: Some(CONTAINER.into()),
        follow,
        tail_lines: tail,
        ..Default::default()
    };
    Ok(pods
        .log_stream(&pod, &params)
        .await?
        .lines()
        .map_err(Error::from))
}

/// `overseer attach AGENT`: kubectl's interactive exec (it owns the terminal: raw
/// mode, resizes) into the agent container, joining the agent's tmux session. The
/// person detaches with the tmux prefix then `d`; the agent goes on running, and the
/// shim sees what the person typed as activity like any other.
pub async fn attach(namespace: Option<&str>, agent: &str) -> Result<()> {
    let (found, _, pod) = current_pod(namespace, agent).await?;
    // The pod runs the mode of the spec (a swarm member's spec holds the swarm's).
    if found.spec.runtime.mode == Some(RuntimeMode::Headless) {
        return Err(Error::Usage(format!(
            "agent {agent} runs headless: it has no session to attach to; `overseer logs {agent} -f` follows its runs"
        )));
    }
    // The pod is in its Agent's namespace.
    let namespace = found.namespace().unwrap_or_default();
    let args = attach_args(&namespace, &pod, &std::env::var("TERM").unwrap_or_default());
    let status = std::process::Command::new("kubectl")
        .args(crate::kubernetes::timeouts::KubeconfigChoice::kubectl_args())
        .args(&args)
        .status()
        .map_err(|e| Error::Refused(format!("attach runs kubectl, which did not start: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::Refused(format!(
            "kubectl exec into {pod} ended with {status}"
        )))
    }
}

/// kubectl's arguments for a terminal in the tmux session of `pod`, with the
/// person's terminal type (tmux refuses to start a client without one).
fn attach_args(namespace: &str, pod: &str, term: &str) -> Vec<String> {
    let mut args: Vec<String> = [
        "exec",
        "--stdin",
        "--tty",
        "--namespace",
        namespace,
        pod,
        "--container",
        CONTAINER,
        "--",
    ]
    .map(String::from)
    .to_vec();
    args.extend(tmux_attach(term));
    args
}

/// The command, in the agent's container, that joins its tmux session with the
/// terminal type `term` (xterm-256color when there is none): `overseer attach`'s, and
/// the console's attach page's.
pub(crate) fn tmux_attach(term: &str) -> Vec<String> {
    let socket = std::path::Path::new(crate::shim::protocol::DEFAULT_SOCKET)
        .with_file_name(crate::shim::tmux::SOCKET_FILE);
    let term = if term.is_empty() || term == "dumb" {
        "xterm-256color"
    } else {
        term
    };
    vec![
        "env".into(),
        format!("TERM={term}"),
        "tmux".into(),
        "-S".into(),
        socket.display().to_string(),
        "attach-session".into(),
        "-t".into(),
        crate::shim::tmux::TARGET.into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::attach_args;

    #[test]
    fn attach_joins_the_shims_tmux_session_with_a_terminal_type() {
        assert_eq!(
            attach_args("team", "builder-3", "screen-256color").join(" "),
            "exec --stdin --tty --namespace team builder-3 --container agent -- \
             env TERM=screen-256color tmux -S /overseer/run/tmux.sock attach-session -t agent"
        );
        assert!(attach_args("team", "builder-3", "").contains(&"TERM=xterm-256color".to_string()));
    }
}
