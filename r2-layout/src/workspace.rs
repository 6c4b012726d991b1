//! Workspace files and the order in which they become the system prompt.
//!
//! The order is seed 003's table (normal and bootstrap), with the guardrail
//! files of seed 001 right after the base scaffold, seed 004's optional
//! STYLE.md (the agent's voice) right after SOUL.md, and the privacy rule of
//! the architecture page: USER.md, MEMORY.md and the daily notes reach only the
//! owner's main session. The prompt builder walks [`load_plan`] and nothing
//! else decides what goes in, so the rule is enforced in one place.

/// Who a session talks to, which decides what private files it may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The owner's DMs (`agent:{id}:main`) and the owner's heartbeat session.
    Main,
    /// Anyone else: allowed DMs from other people, groups, isolated jobs.
    Shared,
}

/// A workspace file Hearth knows by name, at `agents/{agentId}/{file_name}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WorkspaceFile {
    Guardrails,
    Platform,
    Capabilities,
    Bootstrap,
    Soul,
    /// STYLE.md (seed 004): voice, tone and vocabulary. Optional: without it
    /// the scaffold's neutral, helpful default holds.
    Style,
    Identity,
    User,
    Agents,
    Memory,
    Tools,
    Heartbeat,
}

impl WorkspaceFile {
    pub const ALL: [WorkspaceFile; 12] = [
        Self::Guardrails,
        Self::Platform,
        Self::Capabilities,
        Self::Bootstrap,
        Self::Soul,
        Self::Style,
        Self::Identity,
        Self::User,
        Self::Agents,
        Self::Memory,
        Self::Tools,
        Self::Heartbeat,
    ];

    pub fn file_name(self) -> &'static str {
        match self {
            Self::Guardrails => "GUARDRAILS.md",
            Self::Platform => "PLATFORM.md",
            Self::Capabilities => "CAPABILITIES.md",
            Self::Bootstrap => "BOOTSTRAP.md",
            Self::Soul => "SOUL.md",
            Self::Style => "STYLE.md",
            Self::Identity => "IDENTITY.md",
            Self::User => "USER.md",
            Self::Agents => "AGENTS.md",
            Self::Memory => "MEMORY.md",
            Self::Tools => "TOOLS.md",
            Self::Heartbeat => "HEARTBEAT.md",
        }
    }

    pub fn from_file_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.file_name() == name)
    }

    /// The prompt section title (seed 003's "Prompt Section" column).
    pub fn section_title(self) -> &'static str {
        match self {
            Self::Guardrails => "Guardrails",
            Self::Platform => "Platform Rules",
            Self::Capabilities => "Capabilities",
            Self::Bootstrap => "Commissioning (BOOTSTRAP.md)",
            Self::Soul => "Your Soul",
            Self::Style => "Communication Style",
            Self::Identity => "Your Identity",
            Self::User => "About Your Human",
            Self::Agents => "Operating Instructions",
            Self::Memory => "Long-Term Memory",
            Self::Tools => "Tool Notes",
            Self::Heartbeat => "Heartbeats",
        }
    }

    /// Files only the owner's main session may see.
    pub fn is_private(self) -> bool {
        matches!(self, Self::User | Self::Memory)
    }

    /// Guardrail-class files (seed 001): pinned, never writable by the agent.
    pub fn is_guardrail(self) -> bool {
        matches!(self, Self::Guardrails | Self::Platform | Self::Capabilities)
    }

    /// Files read from the agent's own prefix only, never inherited through
    /// the overlay. BOOTSTRAP.md switches the prompt to commissioning mode
    /// until the agent deletes it; an inherited copy (template, defaults)
    /// could never be deleted by the agent, so it would stay in that mode
    /// for ever.
    pub fn is_agent_only(self) -> bool {
        matches!(self, Self::Bootstrap)
    }

    /// Files a shared session (a group, someone else's DM) may read with
    /// `read_file`: what the shared prompt already shows in normal mode
    /// (persona, instructions, tool notes, heartbeat rules, guardrails).
    /// Everything else under the agent's prefix (private files, daily
    /// notes, the owner's notes, BOOTSTRAP.md, job files, archives) stays
    /// with the owner's main session.
    pub fn is_shared_readable(self) -> bool {
        load_plan(Scope::Shared, false).contains(&Section::File(self))
    }
}

/// One step of the prompt, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// The built-in core scaffold (always).
    Scaffold,
    /// A workspace file, included when it exists (HEARTBEAT.md also needs
    /// meaningful content).
    File(WorkspaceFile),
    /// `memory/{yesterday}.md`, "Recent Context > Yesterday".
    Yesterday,
    /// `memory/{today}.md`, "Recent Context > Today".
    Today,
    /// "Skills (Mandatory Scan)", when eligible skills exist.
    Skills,
    /// "Runtime" (always, last).
    Runtime,
}

impl Section {
    pub fn title(self) -> &'static str {
        match self {
            Section::Scaffold => "Core",
            Section::File(f) => f.section_title(),
            Section::Yesterday => "Recent Context > Yesterday",
            Section::Today => "Recent Context > Today",
            Section::Skills => "Skills (Mandatory Scan)",
            Section::Runtime => "Runtime",
        }
    }
}

const GUARDRAIL_SECTIONS: [Section; 3] = [
    Section::File(WorkspaceFile::Guardrails),
    Section::File(WorkspaceFile::Platform),
    Section::File(WorkspaceFile::Capabilities),
];

/// The sections of a prompt, in order, for a scope and mode. Private sections
/// are already removed for [`Scope::Shared`]; what remains is included only if
/// its file exists (the caller checks that).
pub fn load_plan(scope: Scope, bootstrap: bool) -> Vec<Section> {
    use WorkspaceFile as F;
    let mut plan = vec![Section::Scaffold];
    plan.extend(GUARDRAIL_SECTIONS);
    if bootstrap {
        plan.extend([
            Section::File(F::Bootstrap),
            Section::File(F::Soul),
            Section::File(F::Style),
            Section::File(F::Identity),
            Section::File(F::User),
        ]);
    } else {
        plan.extend([
            Section::File(F::Soul),
            Section::File(F::Style),
            Section::File(F::Identity),
            Section::File(F::User),
            Section::File(F::Agents),
            Section::File(F::Memory),
            Section::Yesterday,
            Section::Today,
            Section::File(F::Tools),
            Section::File(F::Heartbeat),
            Section::Skills,
        ]);
    }
    plan.push(Section::Runtime);
    if scope == Scope::Shared {
        plan.retain(|s| !s.is_private());
    }
    plan
}

impl Section {
    /// Whether only the main session may see this section.
    pub fn is_private(self) -> bool {
        match self {
            Section::File(f) => f.is_private(),
            Section::Yesterday | Section::Today => true,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use WorkspaceFile as F;

    fn titles(plan: &[Section]) -> Vec<&'static str> {
        plan.iter().map(|s| s.title()).collect()
    }

    #[test]
    fn main_session_follows_seed_003() {
        assert_eq!(
            titles(&load_plan(Scope::Main, false)),
            [
                "Core",
                "Guardrails",
                "Platform Rules",
                "Capabilities",
                "Your Soul",
                "Communication Style",
                "Your Identity",
                "About Your Human",
                "Operating Instructions",
                "Long-Term Memory",
                "Recent Context > Yesterday",
                "Recent Context > Today",
                "Tool Notes",
                "Heartbeats",
                "Skills (Mandatory Scan)",
                "Runtime",
            ]
        );
    }

    #[test]
    fn shared_sessions_never_see_private_files() {
        for bootstrap in [false, true] {
            let plan = load_plan(Scope::Shared, bootstrap);
            assert!(!plan.contains(&Section::File(F::Memory)));
            assert!(!plan.contains(&Section::File(F::User)));
            assert!(!plan.contains(&Section::Today));
            assert!(!plan.contains(&Section::Yesterday));
            assert!(plan.contains(&Section::File(F::Soul)));
            assert!(plan.contains(&Section::File(F::Style)), "the voice is not private");
        }
    }

    #[test]
    fn bootstrap_replaces_normal_order() {
        assert_eq!(
            titles(&load_plan(Scope::Main, true)),
            [
                "Core",
                "Guardrails",
                "Platform Rules",
                "Capabilities",
                "Commissioning (BOOTSTRAP.md)",
                "Your Soul",
                "Communication Style",
                "Your Identity",
                "About Your Human",
                "Runtime",
            ]
        );
    }

    #[test]
    fn shared_readable_is_what_the_shared_prompt_shows() {
        let readable: Vec<_> = WorkspaceFile::ALL.into_iter().filter(|f| f.is_shared_readable()).collect();
        assert_eq!(
            readable,
            [
                F::Guardrails,
                F::Platform,
                F::Capabilities,
                F::Soul,
                F::Style,
                F::Identity,
                F::Agents,
                F::Tools,
                F::Heartbeat
            ]
        );
        assert!(F::Bootstrap.is_agent_only() && !F::Soul.is_agent_only());
    }

    #[test]
    fn file_names_round_trip() {
        for f in WorkspaceFile::ALL {
            assert_eq!(WorkspaceFile::from_file_name(f.file_name()), Some(f));
        }
        assert_eq!(WorkspaceFile::from_file_name("NOPE.md"), None);
    }
}
