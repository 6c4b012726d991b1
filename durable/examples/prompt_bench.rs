//! Prompt assembly time for a workspace at the 60,000-character budget
//! (native, release). Prints a `BENCH_JSON` line for `npm run bench`.
//!
//!   cargo run --release -p durable --example prompt_bench

use durable::prompt::{build_system_prompt, RuntimeInfo, Workspace};
use r2_layout::{Scope, WorkspaceFile};
use std::time::Instant;

fn main() {
    let mut ws = Workspace::default();
    let para = "The quick brown fox jumps over the lazy dog. Ünïcödé ✓. ".repeat(40);
    for f in [
        WorkspaceFile::Soul,
        WorkspaceFile::Identity,
        WorkspaceFile::User,
        WorkspaceFile::Agents,
        WorkspaceFile::Memory,
        WorkspaceFile::Tools,
    ] {
        ws.files.insert(f, para.repeat(6).chars().take(12_000).collect::<String>().into());
    }
    ws.today = Some(para.clone().into());
    ws.yesterday = Some(para.clone().into());
    let tools = ["read_file", "load_skill"];
    let info = RuntimeInfo {
        agent: "main",
        session_key: "agent:main:main",
        channel: "telegram",
        model: "m",
        timezone: "UTC",
        scope: Scope::Main,
        tool_names: &tools,
    };
    let mut len = 0;
    for _ in 0..50 {
        len = build_system_prompt(&ws, &info).len();
    }
    let n = 2_000;
    let t = Instant::now();
    for _ in 0..n {
        len = std::hint::black_box(build_system_prompt(std::hint::black_box(&ws), &info)).len();
    }
    let us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    println!("prompt assembly at the 60,000-character budget: {us:.1} µs per prompt ({len} bytes)");
    println!("BENCH_JSON {{\"prompt_assembly_us\":{us:.1},\"prompt_bytes\":{len}}}");
}
