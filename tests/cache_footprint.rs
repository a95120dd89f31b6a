//! What the operator's caches hold for each quiet agent: its Agent (the shared watch of
//! Agents, src/kubernetes/caches.rs), its pod (a `PodSummary`) and its Role (a
//! `RoleSummary`), each through the same watch pipeline the operator runs, fed objects
//! recorded from a real API server (tests/fixtures/cache/README.md). An allocator that
//! tallies what is allocated and not yet freed gives the bytes each object keeps, how
//! many blocks, and the bytes as the operator's allocator keeps them (jemalloc rounds
//! each block up to its size class). At 10,000 agents every byte here is 10 KB of the operator's RSS; the
//! budgets below hold the figures of docs/agent.md to what they are, so a change that
//! makes a cached object bigger fails here instead of in a 10,000-agent benchmark.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};

use futures::StreamExt;
use kube::runtime::watcher::Event;
use overseer::agent::Agent;
use overseer::agent::controller::cache_pods;
use overseer::agent::controller::roles_at_start::RolesAtStart;
use overseer::kubernetes::caches::SharedWatch;
use overseer::kubernetes::guard::Guarded;
use overseer::kubernetes::index::Index;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Bytes and blocks allocated and not yet freed, by every thread, and the bytes rounded
/// to jemalloc's size classes.
static BYTES: AtomicIsize = AtomicIsize::new(0);
static BLOCKS: AtomicIsize = AtomicIsize::new(0);
static CLASSED: AtomicIsize = AtomicIsize::new(0);

struct Tally;

/// The size class jemalloc (src/main.rs) serves `size` bytes from: 8, then multiples of
/// 16 up to 128, then four classes to each doubling (160, 192, 224, 256, 320, ...).
fn size_class(size: usize) -> isize {
    let class = match size {
        0..=8 => 8,
        9..=128 => size.next_multiple_of(16),
        _ => size.next_multiple_of(size.next_power_of_two() / 8),
    };
    class as isize
}

/// Counts `block` as `size` bytes taken (when the allocation succeeded), and gives it back.
fn taken(block: *mut u8, size: usize) -> *mut u8 {
    if !block.is_null() {
        BYTES.fetch_add(size as isize, Relaxed);
        BLOCKS.fetch_add(1, Relaxed);
        CLASSED.fetch_add(size_class(size), Relaxed);
    }
    block
}

// SAFETY: every call is passed to the system allocator as it came; the tally only counts.
unsafe impl GlobalAlloc for Tally {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        taken(unsafe { System.alloc(layout) }, layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        taken(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        unsafe { System.dealloc(block, layout) };
        BYTES.fetch_sub(layout.size() as isize, Relaxed);
        BLOCKS.fetch_sub(1, Relaxed);
        CLASSED.fetch_sub(size_class(layout.size()), Relaxed);
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        let moved = unsafe { System.realloc(block, layout, size) };
        if !moved.is_null() {
            BYTES.fetch_add(size as isize - layout.size() as isize, Relaxed);
            CLASSED.fetch_add(size_class(size) - size_class(layout.size()), Relaxed);
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Tally = Tally;

/// Objects of each kind cached: enough that the caches' own tables are averaged in.
const OBJECTS: usize = 2000;

/// What one cached object keeps.
#[derive(Debug)]
struct Kept {
    bytes: f64,
    blocks: f64,
    /// Bytes as jemalloc keeps them, each block rounded up to its size class.
    classed: f64,
}

/// Runs `fill` (which must keep what it caches alive in what it returns) and gives what
/// it kept per object, with the cache it returns.
fn kept_by<T>(fill: impl FnOnce() -> T) -> (Kept, T) {
    let counters = [&BYTES, &BLOCKS, &CLASSED];
    let before = counters.map(|c| c.load(Relaxed));
    let cache = fill();
    let [bytes, blocks, classed] =
        std::array::from_fn(|i| (counters[i].load(Relaxed) - before[i]) as f64 / OBJECTS as f64);
    let kept = Kept {
        bytes,
        blocks,
        classed,
    };
    (kept, cache)
}

fn recorded(file: &str) -> Value {
    let path = format!("{}/tests/fixtures/cache/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `OBJECTS` copies of a recorded object as the API server would send them: each its
/// own name (`agent` names the agent it belongs to), uid and version. They live as long as
/// the test, as the watches take them: allocated before and freed after what is counted.
fn copies(recorded: &Value, agent_label: bool) -> &'static [Vec<u8>] {
    let copies: Vec<Vec<u8>> = (0..OBJECTS)
        .map(|i| {
            let mut object = recorded.clone();
            let meta = &mut object["metadata"];
            let name = format!("{}-{i:05}", meta["name"].as_str().unwrap());
            meta["uid"] = format!("0b5e6f0e-1111-2222-3333-{i:012}").into();
            meta["resourceVersion"] = (1_000_000 + i).to_string().into();
            if agent_label {
                meta["labels"]["overseer.dev/agent"] = format!("a-{i:05}").into();
            }
            meta["name"] = name.into();
            serde_json::to_vec(&object).unwrap()
        })
        .collect();
    copies.leak()
}

/// The first list of a watch, as the watcher yields it from the API server's answer.
fn first_list<K: DeserializeOwned>(
    answer: &'static [Vec<u8>],
) -> impl futures::Stream<Item = Result<Event<K>, kube::runtime::watcher::Error>> {
    let objects = answer
        .iter()
        .map(|bytes| Event::InitApply(serde_json::from_slice(bytes).unwrap()));
    futures::stream::iter(
        std::iter::once(Event::Init)
            .chain(objects)
            .chain(std::iter::once(Event::InitDone))
            .map(Ok),
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

#[test]
fn a_quiet_agents_cached_objects_keep_what_docs_agent_md_says() {
    let runtime = runtime();
    let recorded_pod = recorded("pod.json");
    let agents = copies(&recorded("agent.json"), false);
    let pods = copies(&recorded_pod, true);
    let roles_answer = copies(&recorded("role.json"), true);
    // The copy of pod 42 is noted under agent 42 (`copies` gives each its own agent).
    let (pod_namespace, pod_42) = (
        recorded_pod["metadata"]["namespace"].as_str().unwrap(),
        format!(
            "{}-00042",
            recorded_pod["metadata"]["name"].as_str().unwrap()
        ),
    );

    let (agent, _agent_cache) = kept_by(|| {
        let mut watch = SharedWatch::<Guarded<Agent>>::default();
        // A subscriber keeps the versions; its events are not taken here.
        let subscription = watch.subscribe();
        drop(subscription.events);
        let store = subscription.store;
        runtime.block_on(watch.run("Agent", first_list(agents)));
        let cached = store.state();
        assert_eq!(cached.len(), OBJECTS);
        assert!(cached.iter().all(|a| a.0.is_ok()), "every Agent decodes");
        drop(cached);
        (store, subscription.versions)
    });
    let (pod, _pod_cache) = kept_by(|| {
        let pods_of = Index::default();
        let (store, events) = cache_pods(first_list(pods), pods_of.clone());
        runtime.block_on(events.for_each(|_| futures::future::ready(())));
        assert_eq!(store.state().len(), OBJECTS);
        assert_eq!(
            pods_of.named(pod_namespace, "a-00042"),
            std::slice::from_ref(&pod_42)
        );
        (store, pods_of)
    });
    let role_name = |i: usize| format!("overseer-agent-a1-{i:05}");
    let (role, roles_at_start) = kept_by(|| {
        let roles = RolesAtStart::default();
        runtime.block_on(roles.fill(first_list(roles_answer)));
        assert!(roles.listed());
        assert_eq!(roles.len(), OBJECTS);
        roles
    });
    // Each agent's first reconcile takes its Role's entry: then none is kept.
    let before_taken = BYTES.load(Relaxed);
    for i in 0..OBJECTS {
        let seen = roles_at_start.take(pod_namespace, &role_name(i));
        assert!(seen.is_some_and(|r| r.controller.is_some()), "Role {i}");
    }
    assert!(roles_at_start.is_empty());
    let taken = before_taken - BYTES.load(Relaxed);
    let mut table = String::from("| cached | bytes | blocks | in jemalloc's size classes |\n");
    for (name, kept) in [
        ("Agent", &agent),
        ("pod", &pod),
        ("Role, until its agent's first reconcile", &role),
    ] {
        table += &format!(
            "| {name} | {:.0} | {:.1} | {:.0} |\n",
            kept.bytes, kept.blocks, kept.classed
        );
    }
    println!("{table}");
    println!(
        "inline: Agent {} (spec {}, status {}, metadata {})",
        std::mem::size_of::<Agent>(),
        std::mem::size_of::<overseer::agent::AgentSpec>(),
        std::mem::size_of::<overseer::agent::AgentStatus>(),
        std::mem::size_of::<kube::api::ObjectMeta>(),
    );
    // What the first list kept is given back as the agents are reconciled.
    assert!(
        taken as f64 >= 0.99 * role.bytes * OBJECTS as f64,
        "taking every Role gave back {taken} of {:.0} bytes",
        role.bytes * OBJECTS as f64
    );
    for (name, kept, budget) in [
        ("Agent", &agent, AGENT_BUDGET),
        ("pod", &pod, POD_BUDGET),
        ("Role", &role, ROLE_BUDGET),
    ] {
        assert!(
            kept.classed <= budget,
            "a cached {name} keeps {:.0} bytes, over its budget of {budget:.0}\n{table}",
            kept.classed
        );
    }
}

/// Each kind's budget: bytes in jemalloc's size classes, per cached object, about 10%
/// above what was measured on 2026-12-07, night: Agent 4,225, pod 1,231 (with its entry
/// in the pods' index), a Role of the first list 309. (Counted as glibc keeps them,
/// with its 16-byte headers, that evening: 4,528, 1,508 and 296; that morning 4,929,
/// 2,495, and 1,910 for a Role watched and kept as a `RoleSummary` for good.)
const AGENT_BUDGET: f64 = 4_650.0;
const POD_BUDGET: f64 = 1_350.0;
const ROLE_BUDGET: f64 = 340.0;

#[test]
fn sizes_round_up_to_jemallocs_classes() {
    let sizes = [1, 8, 9, 17, 128, 129, 200, 257, 1000, 14_337];
    let classes = [8, 8, 16, 32, 128, 160, 224, 320, 1024, 16_384];
    assert_eq!(sizes.map(size_class), classes);
}
