//! `load_skill`: the whole SKILL.md of a listed skill, on demand. Only the
//! skills this session lists ([`crate::workspace::skills::eligible`] for its tools) can
//! be loaded: a skill needing `write_file` is not loaded in a group.

use super::{ToolContext, ToolOutcome};
use crate::ports::ObjectStore;
use serde_json::{json, Value};

pub fn spec() -> crate::toolkit::ToolSpec {
    crate::toolkit::ToolSpec {
        name: "load_skill".into(),
        description: "Load the full instructions of one of your available skills by name.".into(),
        input_schema: json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
        native: None,
    }
}

pub async fn load_skill<S: ObjectStore>(ctx: &ToolContext<'_, S>, args: &Value) -> ToolOutcome {
    let Some(name) = args.get("name").and_then(Value::as_str) else {
        return ToolOutcome::err("missing string argument 'name'");
    };
    let listed = crate::workspace::skills::eligible(&ctx.workspace.skills, ctx.tool_names);
    let Some(skill) = listed.iter().find(|s| s.name == name.trim()) else {
        let names: Vec<&str> = listed.iter().map(|s| s.name.as_str()).collect();
        return ToolOutcome::err(format!("no skill named {name:?}; available: {}", names.join(", ")));
    };
    match ctx.store.get(&skill.key).await {
        Ok(Some(o)) => ToolOutcome::ok(String::from_utf8_lossy(&o.body).into_owned()),
        Ok(None) => ToolOutcome::err(format!("skill {name} was removed")),
        Err(e) => ToolOutcome::err(format!("could not load skill {name}: {e}")),
    }
}
