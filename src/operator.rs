//! The operator process: connects, checks the CRDs, serves health and metrics,
//! takes the leader Lease, and runs the controllers with one shared `Context`.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::{Router, extract::State, http::StatusCode, routing::get};
use clap::Args;
use futures::FutureExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, api::ListParams};
use serde::de::DeserializeOwned;
use tracing::{error, info, warn};

use crate::controller::{Context, Failures, Shutdown, scoped_api};
use crate::kubernetes::caches::SharedWatch;
use crate::kubernetes::guard::Guarded;
use crate::kubernetes::leader::{Fence, FenceWrites, LeaderElector, LeaseTiming};
use crate::kubernetes::writes::CountWrites;
use crate::metrics::Metrics;
use crate::telemetry::LogFormat;
use crate::{Error, Result, agent::Agent, goal::Goal, prwatch::PRWatch, swarm::Swarm};

/// How `overseer run` is configured, by flags or environment.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Watch only this namespace (default: all namespaces).
    /// Set from the global `-n/--namespace` (src/cli.rs).
    #[arg(skip)]
    pub namespace: Option<String>,
    /// Address of /healthz, /readyz and /metrics.
    #[arg(long, env = "OVERSEER_METRICS_ADDR", default_value = "0.0.0.0:8080")]
    pub metrics_addr: SocketAddr,
    /// Take the leader Lease before acting, so that only one replica acts at a time.
    #[arg(long, env = "OVERSEER_LEADER_ELECT")]
    pub leader_elect: bool,
    /// Name of the leader Lease.
    #[arg(long, default_value = "overseer-controller")]
    pub lease_name: String,
    /// Namespace of the leader Lease (default: the pod's namespace, then the watched one, then `default`).
    #[arg(long, env = "POD_NAMESPACE")]
    pub lease_namespace: Option<String>,
    /// How long the Lease stays valid without renewal (seconds).
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(2..=300))]
    pub lease_duration_secs: u64,
    /// Objects of one kind reconciled at once.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrency: u16,
    /// Image holding the `overseer` binary, copied into agent and step pods by an init container.
    #[arg(long, env = "OVERSEER_IMAGE", default_value = concat!("ghcr.io/overseer-dev/overseer:", env!("CARGO_PKG_VERSION")))]
    pub overseer_image: String,
    /// The `overseer` binary inside agent pods, which nudges and wakes run through exec.
    #[arg(
        long,
        env = "OVERSEER_INPUT_COMMAND",
        default_value = "/overseer/bin/overseer"
    )]
    pub input_command: String,
    /// How long a message from `overseer send` waits for a pod that can take it
    /// before it is reported failed.
    #[arg(long, default_value = "5m", value_parser = crate::duration::parse_arg)]
    pub send_expiry: Duration,
    /// How long a finished step pod, and the pod of an agent whose loop ended (Done,
    /// Released, Blocked), is kept for a person to read before it is deleted; `off`
    /// keeps them until their Goal or Agent is deleted. The status keeps the outcome.
    #[arg(long, default_value = "1h", value_parser = crate::duration::parse_arg_or_off)]
    pub pod_retention: std::option::Option<Duration>,
    /// Where a PRWatch may send its token: `https://HOST[:PORT]` of GitHub and each
    /// GitHub Enterprise server (repeat, or comma-separate). Anything else is refused
    /// before the Secret is read. A plain `http://` origin is honoured only when listed.
    #[arg(
        long = "github-api-origin",
        env = "OVERSEER_GITHUB_API_ORIGINS",
        value_delimiter = ',',
        default_value = "https://api.github.com"
    )]
    pub github_api_origins: Vec<String>,
    /// Ranges a notify webhook may reach although they are internal (loopback,
    /// private, link-local): an in-cluster receiver's, as CIDRs (repeat, or
    /// comma-separate). Everything internal is refused by default.
    #[arg(
        long = "notify-allowed-cidr",
        env = "OVERSEER_NOTIFY_ALLOWED_CIDRS",
        value_delimiter = ','
    )]
    pub notify_allowed_cidrs: Vec<ipnet::IpNet>,
    /// Ranges a notify webhook never reaches, even when allowed above or public: the
    /// cluster's service and pod ranges where they lie outside the private ones.
    #[arg(
        long = "notify-refused-cidr",
        env = "OVERSEER_NOTIFY_REFUSED_CIDRS",
        value_delimiter = ','
    )]
    pub notify_refused_cidrs: Vec<ipnet::IpNet>,
    /// Give every agent and step pod an egress NetworkPolicy (owned by its Agent or
    /// Goal) that allows DNS, the API server and the public internet, and refuses the
    /// cluster's other pods, services, nodes and the cloud metadata addresses. Needs a
    /// network plugin that enforces NetworkPolicy to take effect.
    #[arg(
        long = "sandbox-egress",
        env = "OVERSEER_SANDBOX_EGRESS",
        default_value_t = true,
        action = clap::ArgAction::Set
    )]
    pub sandbox_egress: bool,
    /// More destinations every agent and step pod may reach, as CIDRs (repeat, or
    /// comma-separate): an internal git host or model proxy.
    #[arg(
        long = "sandbox-allow-cidr",
        env = "OVERSEER_SANDBOX_ALLOW_CIDRS",
        value_delimiter = ','
    )]
    pub sandbox_allow_cidrs: Vec<ipnet::IpNet>,
    /// The API server's addresses, which the sandbox allows (the shim reports there).
    /// Unset: read from the `kubernetes` Service's endpoints in `default` at start.
    #[arg(
        long = "api-server-cidr",
        env = "OVERSEER_API_SERVER_CIDRS",
        value_delimiter = ','
    )]
    pub api_server_cidrs: Vec<ipnet::IpNet>,
    /// Log format.
    #[arg(long, value_enum, env = "OVERSEER_LOG_FORMAT", default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Log filter, as RUST_LOG reads it (for example `info` or `overseer=debug`).
    #[arg(long, env = "RUST_LOG", default_value = "info")]
    pub log_level: String,
}

impl RunArgs {
    pub fn lease_duration(&self) -> Duration {
        Duration::from_secs(self.lease_duration_secs)
    }

    pub fn lease_namespace(&self) -> String {
        self.lease_namespace
            .clone()
            .or_else(|| self.namespace.clone())
            .unwrap_or_else(|| "default".into())
    }
}

fn shutdown_signal() -> Shutdown {
    async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing the SIGTERM handler");
        tokio::select! {
            _ = term.recv() => info!("SIGTERM received, shutting down"),
            _ = tokio::signal::ctrl_c() => info!("interrupt received, shutting down"),
        }
    }
    .boxed()
    .shared()
}

/// The controllers of the four kinds, each running until `shutdown`, and the one watch
/// of each kind they share (src/kubernetes/caches.rs), which ends with the process.
fn controllers(
    ctx: Arc<Context>,
    shutdown: Shutdown,
) -> Vec<Pin<Box<dyn Future<Output = ()> + Send>>> {
    let mut agents = SharedWatch::<Guarded<Agent>>::default();
    let mut goals = SharedWatch::<Guarded<Goal>>::default();
    let mut swarms = SharedWatch::<Guarded<Swarm>>::default();
    count_by_phase(&ctx.metrics, &agents, &goals);
    let controllers: Vec<Pin<Box<dyn Future<Output = ()> + Send>>> = vec![
        Box::pin(crate::goal::controller::run(
            ctx.clone(),
            goals.subscribe(),
            swarms.subscribe(),
            shutdown.clone(),
        )),
        Box::pin(crate::agent::controller::run(
            ctx.clone(),
            agents.subscribe(),
            swarms.subscribe(),
            shutdown.clone(),
        )),
        Box::pin(crate::swarm::controller::run(
            ctx.clone(),
            swarms.subscribe(),
            agents.subscribe(),
            goals.subscribe(),
            shutdown.clone(),
        )),
        Box::pin(crate::prwatch::controller::run(
            ctx.clone(),
            agents.subscribe(),
            shutdown,
        )),
    ];
    // Every subscription is taken: the watches may start. Their lists are consistent
    // reads, which the controllers trust after a restart (src/kubernetes/fresh.rs).
    let config = watcher::Config::default();
    tokio::spawn(agents.run(
        "Agent",
        watcher(ctx.api(), config.clone()).default_backoff(),
    ));
    tokio::spawn(goals.run("Goal", watcher(ctx.api(), config.clone()).default_backoff()));
    tokio::spawn(swarms.run("Swarm", watcher(ctx.api(), config).default_backoff()));
    controllers
}

/// Serves `overseer_agents{phase}` and `overseer_goals{phase}` from the shared caches.
fn count_by_phase(
    metrics: &Metrics,
    agents: &SharedWatch<Guarded<Agent>>,
    goals: &SharedWatch<Guarded<Goal>>,
) {
    let _ = metrics
        .by_phase
        .agents
        .set(crate::metrics::phase_count(agents.store(), |a: &Agent| {
            a.status.as_ref().and_then(|s| s.phase)
        }));
    let _ = metrics
        .by_phase
        .goals
        .set(crate::metrics::phase_count(goals.store(), |g: &Goal| {
            g.status.as_ref().and_then(|s| s.phase)
        }));
    let store = agents.store();
    let _ = metrics.by_phase.escalations.set(Box::new(move || {
        let mut open = std::collections::BTreeMap::new();
        for severity in ["info", "warning", "critical"] {
            open.insert(severity.to_string(), 0);
        }
        for agent in store.state() {
            let Ok(agent) = &agent.0 else { continue };
            for e in agent.status.iter().flat_map(|s| s.open_escalations()) {
                *open.entry(e.severity.label().to_string()).or_insert(0) += 1;
            }
        }
        open
    }));
}

/// Runs the operator until SIGTERM (Ok) or until leadership is lost (Err).
pub async fn run(args: RunArgs) -> Result<()> {
    let metrics = Arc::new(Metrics::default());
    // Elected replicas write only while their Lease holds (src/kubernetes/leader.rs).
    let fence = if args.leader_elect {
        Fence::closed()
    } else {
        Fence::open()
    };
    let client = operator_client(&metrics, &fence).await?;
    ensure_crds(&client, args.namespace.as_deref()).await?;

    let health = Arc::new(Health {
        ready: AtomicBool::new(false),
        metrics: metrics.clone(),
    });
    let listener = tokio::net::TcpListener::bind(args.metrics_addr).await?;
    info!(addr = %listener.local_addr()?, "serving /healthz, /readyz and /metrics");
    let shutdown = shutdown_signal();
    tokio::spawn(serve_health(listener, health.clone(), shutdown.clone()));
    health.ready.store(true, Ordering::Relaxed);

    let mut elector = if args.leader_elect {
        let api: Api<Lease> = Api::namespaced(client.clone(), &args.lease_namespace());
        let identity = format!("{}-{}", hostname(), std::process::id());
        let mut elector = LeaderElector::new(
            api,
            &args.lease_name,
            &identity,
            LeaseTiming::from_duration(args.lease_duration()),
            fence,
        );
        info!(lease = %args.lease_name, %identity, "waiting for leadership");
        tokio::select! {
            () = elector.acquire() => {}
            _ = shutdown.clone() => return Ok(()),
        }
        Some(elector)
    } else {
        None
    };
    metrics.leader.set(1);

    let found = if args.sandbox_egress && args.api_server_cidrs.is_empty() {
        discover_api_server(&client).await
    } else {
        Vec::new()
    };
    let ctx = context_with(
        &args,
        client,
        metrics.clone(),
        api_server_cidrs(&args, found),
    );
    let work = {
        let shutdown = shutdown.clone();
        async move {
            futures::future::join_all(controllers(ctx, shutdown.clone())).await;
            shutdown.await;
        }
    };
    let outcome = match elector.as_mut() {
        Some(elector) => tokio::select! {
            _ = work => Ok(()),
            lost = elector.hold() => Err(lost),
        },
        None => {
            work.await;
            Ok(())
        }
    };
    metrics.leader.set(0);
    if let (Some(elector), Ok(())) = (elector.as_mut(), &outcome) {
        elector.release().await;
    }
    if let Err(error) = &outcome {
        error!(%error, "stopping");
    }
    outcome
}

/// The operator's client: every request counted, every write fenced by the Lease, and
/// every answer awaited at most `ANSWER_DEADLINE`.
async fn operator_client(metrics: &Metrics, fence: &Fence) -> Result<Client> {
    let config = crate::kubernetes::timeouts::config().await?;
    Ok(kube::client::ClientBuilder::try_from(config)
        .map_err(|e| Error::Connect(e.to_string()))?
        .with_layer(&CountWrites::from_env(
            metrics.api_writes.clone(),
            metrics.api_reads.clone(),
        )?)
        .with_layer(&FenceWrites(fence.clone()))
        .with_layer(&crate::kubernetes::timeouts::AnswerDeadline(
            crate::kubernetes::timeouts::ANSWER_DEADLINE,
        ))
        .build())
}

/// What every controller shares, from the flags alone (the API server's addresses
/// only from `--api-server-cidr`): for tests of a controller against a scripted client.
#[cfg(test)]
pub(crate) fn context(args: &RunArgs, client: Client, metrics: Arc<Metrics>) -> Arc<Context> {
    context_with(args, client, metrics, api_server_cidrs(args, Vec::new()))
}

/// The API server's addresses: the flag's, else those read from the cluster.
fn api_server_cidrs(args: &RunArgs, found: Vec<String>) -> Vec<String> {
    if args.api_server_cidrs.is_empty() {
        found
    } else {
        args.api_server_cidrs
            .iter()
            .map(ToString::to_string)
            .collect()
    }
}

/// The addresses of the `kubernetes` Service's endpoints in `default`: the API
/// server's own, which a sandboxed pod must reach. Empty, with a warning, when they
/// cannot be read (the flag `--api-server-cidr` then says them).
async fn discover_api_server(client: &Client) -> Vec<String> {
    use k8s_openapi::api::core::v1::Endpoints;
    let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), "default");
    match endpoints.get("kubernetes").await {
        Ok(found) => found
            .subsets
            .iter()
            .flatten()
            .flat_map(|s| s.addresses.iter().flatten())
            .filter_map(|a| a.ip.parse::<std::net::IpAddr>().ok())
            .map(|ip| ipnet::IpNet::from(ip).to_string())
            .collect(),
        Err(error) => {
            warn!(%error, "the API server's addresses could not be read (set --api-server-cidr): sandboxed pods may not reach it under an enforcing network plugin");
            Vec::new()
        }
    }
}

/// What every controller shares, from the flags and the API server's addresses.
fn context_with(
    args: &RunArgs,
    client: Client,
    metrics: Arc<Metrics>,
    api_server: Vec<String>,
) -> Arc<Context> {
    Arc::new(Context {
        sandbox: crate::egress::Sandbox {
            enabled: args.sandbox_egress,
            api_server,
            allow: args
                .sandbox_allow_cidrs
                .iter()
                .map(ToString::to_string)
                .collect(),
        },
        events: crate::kubernetes::events::EventQueue::start(
            client.clone(),
            "overseer-controller",
            metrics.events_dropped.clone(),
        ),
        client,
        metrics,
        namespace: args.namespace.clone(),
        concurrency: args.concurrency,
        overseer_image: args.overseer_image.clone(),
        input_command: args.input_command.clone(),
        send_expiry: args.send_expiry,
        pod_retention: args.pod_retention,
        github_api_origins: args.github_api_origins.clone(),
        notify_destinations: Arc::new(crate::https::Destinations::new(
            args.notify_allowed_cidrs.clone(),
            args.notify_refused_cidrs.clone(),
        )),
        failures: Failures::default(),
        deliveries: Arc::new(crate::delivery::slots::Deliveries::new(
            crate::delivery::slots::IN_ALL,
        )),
    })
}

fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "overseer".into())
}

/// Fails with a one-line hint when any of the four kinds is not served.
pub async fn ensure_crds(client: &Client, namespace: Option<&str>) -> Result<()> {
    async fn probe<K>(client: &Client, namespace: Option<&str>) -> Result<()>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + std::fmt::Debug,
        K::DynamicType: Default,
    {
        let api: Api<K> = scoped_api(client, namespace);
        match api.list_metadata(&ListParams::default().limit(1)).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => {
                Err(Error::CrdsMissing(format!(
                    "{}.{}",
                    K::plural(&Default::default()),
                    K::group(&Default::default())
                )))
            }
            Err(error) => Err(Error::Connect(error.to_string())),
        }
    }
    probe::<Agent>(client, namespace).await?;
    probe::<Goal>(client, namespace).await?;
    probe::<PRWatch>(client, namespace).await?;
    probe::<Swarm>(client, namespace).await
}

struct Health {
    ready: AtomicBool,
    metrics: Arc<Metrics>,
}

async fn serve_health(listener: tokio::net::TcpListener, health: Arc<Health>, shutdown: Shutdown) {
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(|State(h): State<Arc<Health>>| async move {
                if h.ready.load(Ordering::Relaxed) {
                    (StatusCode::OK, "ready")
                } else {
                    (StatusCode::SERVICE_UNAVAILABLE, "not ready")
                }
            }),
        )
        .route(
            "/metrics",
            get(|State(h): State<Arc<Health>>| async move {
                (
                    [(
                        "content-type",
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    h.metrics.encode(),
                )
            }),
        )
        .with_state(health);
    if let Err(error) = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
    {
        error!(%error, "health server failed");
    }
}
