//! Delivery: everything that types into an agent, for every kind that does. Exec slots
//! per namespace and one task per object (`slots`), the one pod input may go into and
//! the exec of `overseer input` there (`input`, `exec`), nudges and wakes claimed
//! before their exec and settled after it (`claims`), the inbox of `overseer send`
//! (`inbox`). It reads
//! only the kinds layer and the shared modules; each kind's controller is the shell
//! that acts on these decisions (the Agent's courier, src/agent/controller/delivery.rs).

pub mod claims;
pub mod escalation;
pub mod exec;
pub mod inbox;
pub mod input;
pub mod mail;
pub mod slots;
