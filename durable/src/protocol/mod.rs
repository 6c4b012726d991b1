//! What Durable Objects say to each other, as typed structs: every call from
//! the Worker or one object to another has its request and reply here, so
//! both sides share one definition and no side reads `v["field"]`.

pub mod memory;
pub mod pins;
