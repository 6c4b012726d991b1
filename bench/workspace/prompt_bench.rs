//! Workspace figures for `npm run bench` (native, release), printed as a
//! `BENCH_JSON` line:
//!
//! - prompt assembly time for a workspace at the 60,000-character budget;
//! - R2 operations per turn when turns are spaced past the listing TTLs.
//!   workerd's clock cannot be moved from a test, so this part runs the real
//!   loader (`load_workspace`) against an in-memory bucket holding the
//!   starter workspace, the built-in skills and a daily note, with the clock
//!   advanced between turns. The steady state (turns close together) is
//!   measured in workerd by `bench/workspace.mjs`.
//!
//!   cargo run --release -p durable --example prompt_bench

use durable::ports::{ListPage, ObjectInfo, ObjectStore, PutOptions, StorageError, StoredObject};
use durable::prompt::{build_system_prompt, RuntimeInfo};
use durable::protocol::pins::Pins;
use durable::session::toolbox::all_tool_names;
use durable::settings::overlay::PlaceholderValues;
use durable::workspace::listing::{AGENT_FOLDER_TTL_MS, SHARED_LAYER_TTL_MS};
use durable::workspace::OverlayInputs;
use durable::workspace::{load_workspace, Workspace, WorkspaceCache};
use r2_layout::{AgentId, Scope, WorkspaceFile};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

fn prompt_assembly_us() -> (f64, usize) {
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
    let info = RuntimeInfo {
        agent: "main",
        session_key: "agent:main:main",
        channel: "telegram",
        model: "m",
        timezone: "UTC",
        scope: Scope::Main,
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
    (t.elapsed().as_secs_f64() * 1e6 / n as f64, len)
}

/// An R2 bucket in memory (keys in order, etags that change on every put).
#[derive(Default)]
struct Bucket {
    objects: RefCell<BTreeMap<String, (String, Vec<u8>)>>,
}

impl Bucket {
    fn put_dir(&self, dir: &Path, prefix: &str) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.path().is_dir() {
                self.put_dir(&e.path(), &format!("{prefix}{name}/"));
            } else if let Ok(bytes) = std::fs::read(e.path()) {
                self.insert(&format!("{prefix}{name}"), bytes);
            }
        }
    }
    fn insert(&self, key: &str, body: Vec<u8>) {
        let n = self.objects.borrow().len();
        self.objects.borrow_mut().insert(key.to_owned(), (format!("e{n}"), body));
    }
}

impl ObjectStore for Bucket {
    async fn get(&self, key: &str) -> Result<Option<StoredObject>, StorageError> {
        Ok(self.objects.borrow().get(key).map(|(etag, body)| StoredObject {
            info: ObjectInfo { key: key.to_owned(), size: body.len() as u64, etag: etag.clone(), uploaded_ms: 0 },
            body: body.clone(),
            ..Default::default()
        }))
    }
    async fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StorageError> {
        Ok(self.get(key).await?.map(|o| o.info))
    }
    async fn put(&self, key: &str, body: Vec<u8>, _: PutOptions) -> Result<(), StorageError> {
        self.insert(key, body);
        Ok(())
    }
    async fn delete(&self, keys: &[String]) -> Result<(), StorageError> {
        for k in keys {
            self.objects.borrow_mut().remove(k);
        }
        Ok(())
    }
    async fn list(&self, prefix: &str, delimiter: Option<&str>, _: Option<&str>) -> Result<ListPage, StorageError> {
        let mut page = ListPage::default();
        for (key, (etag, body)) in self.objects.borrow().range(prefix.to_owned()..) {
            let Some(rest) = key.strip_prefix(prefix) else { break };
            match delimiter.and_then(|d| rest.find(d).map(|i| format!("{prefix}{}{d}", &rest[..i]))) {
                Some(p) if !page.prefixes.contains(&p) => page.prefixes.push(p),
                Some(_) => {}
                None => page.objects.push(ObjectInfo {
                    key: key.clone(),
                    size: body.len() as u64,
                    etag: etag.clone(),
                    uploaded_ms: 0,
                }),
            }
        }
        Ok(page)
    }
}

/// R2 operations of turns at the given offsets (ms) after a first turn.
fn r2_ops_by_spacing(offsets: &[i64]) -> Vec<u32> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let bucket = Bucket::default();
    bucket.put_dir(&root.join("r2-layout/starter"), "agents/main/");
    bucket.put_dir(&root.join("skills"), "skills/");
    let t0 = 1_773_543_600_000;
    bucket.insert("agents/main/memory/2026-03-15.md", b"- a note".to_vec());
    let agent = AgentId::parse("main").unwrap_or_else(|e| panic!("{e}"));
    let (pins, values) = (Pins::default(), PlaceholderValues::default());
    let overlay = OverlayInputs { template: None, pins: &pins, values: &values };
    let mut cache = WorkspaceCache::default();
    let mut ops = Vec::new();
    for &dt in std::iter::once(&0).chain(offsets) {
        let loaded = futures::executor::block_on(load_workspace(
            &bucket,
            &agent,
            Scope::Main,
            "2026-03-15",
            "2026-03-14",
            t0 + dt,
            &overlay,
            &all_tool_names(),
            &mut cache,
        ));
        match loaded {
            Ok(ws) => ops.push(ws.r2_ops),
            Err(e) => panic!("load failed: {e}"),
        }
    }
    ops
}

fn main() {
    let (us, len) = prompt_assembly_us();
    println!("prompt assembly at the 60,000-character budget: {us:.1} µs per prompt ({len} bytes)");
    // First turn, then a turn 30 s later (steady state), then turns each
    // spaced just past the agent-folder TTL, then one past the shared TTL.
    let a = AGENT_FOLDER_TTL_MS + 1_000;
    let offsets = [30_000, 30_000 + a, 30_000 + 2 * a, 30_000 + 2 * a + SHARED_LAYER_TTL_MS];
    let ops = r2_ops_by_spacing(&offsets);
    let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    println!(
        "R2 operations: first {}, +30 s {}, +61 s {}, +61 s {}, +5 min {}",
        ops[0], ops[1], ops[2], ops[3], ops[4]
    );
    println!(
        "BENCH_JSON {{\"prompt_assembly_us\":{us:.1},\"prompt_bytes\":{len},\"r2_ops_spaced\":[{}],\"agent_folder_ttl_s\":{},\"shared_layer_ttl_s\":{}}}",
        list(&ops),
        AGENT_FOLDER_TTL_MS / 1000,
        SHARED_LAYER_TTL_MS / 1000
    );
}
