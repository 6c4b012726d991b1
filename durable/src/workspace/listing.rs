//! R2 listings for the workspace loader, cached per prefix with a TTL and
//! made concurrently, so a turn waits one R2 round trip however many of
//! them are due.
//!
//! What is listed, and how long a listing is trusted (the lag before an
//! edit made outside Hearth shows up):
//!
//! | prefix | TTL | why |
//! |---|---|---|
//! | `agents/{id}/` (root files) | every turn | an edit of SOUL.md & co. is seen on the next turn |
//! | `agents/{id}/memory/{date prefix}` | [`AGENT_FOLDER_TTL_MS`] | the agent's daily notes |
//! | `agents/{id}/skills/` | [`AGENT_FOLDER_TTL_MS`] | the agent's own skills |
//! | `_catalog/{template}/workspace/` | [`SHARED_LAYER_TTL_MS`] | shared by many agents, edited rarely |
//! | `_catalog/defaults/workspace/` | [`SHARED_LAYER_TTL_MS`] | idem |
//! | `skills/` | [`SHARED_LAYER_TTL_MS`] | global skills, changed by deploys |
//!
//! The agent's own writes (write_file, a daily note from a reset) drop the
//! cached listings of the agent's folders at once
//! ([`ListingCache::invalidate_agent_folders`]).

use crate::ports::{ObjectInfo, ObjectStore, StorageError};
use crate::storage::list_all;
use std::collections::HashMap;
use std::rc::Rc;

/// How long the listings of the agent's own folders (daily notes, skills)
/// are reused.
pub const AGENT_FOLDER_TTL_MS: i64 = 60_000;
/// How long the listings of layers shared by many agents (template,
/// defaults, global skills) are reused.
pub const SHARED_LAYER_TTL_MS: i64 = 5 * 60_000;

/// One listing a load wants.
#[derive(Debug, Clone, Copy)]
pub struct Want<'a> {
    pub prefix: &'a str,
    /// `Some("/")`: only the objects directly under the prefix.
    pub delimiter: Option<&'a str>,
    /// `0`: listed on every call.
    pub ttl_ms: i64,
}

/// A listing and the time it was made.
type Listed = (i64, Rc<Vec<ObjectInfo>>);

/// Listings by prefix (and whether a delimiter was used).
#[derive(Debug, Default)]
pub struct ListingCache {
    entries: HashMap<(String, bool), Listed>,
    /// The listings were just made for this turn by another object (the
    /// Agent's, [`super::snapshot`]): the next load takes every one as it
    /// is, even those listed on every turn. Cleared by that load.
    handed_over: bool,
}

impl ListingCache {
    fn fresh(&self, want: &Want<'_>, now_ms: i64) -> Option<Rc<Vec<ObjectInfo>>> {
        let (at, objects) = self.entries.get(&(want.prefix.to_owned(), want.delimiter.is_some()))?;
        (self.handed_over || (now_ms >= *at && now_ms - at < want.ttl_ms)).then(|| objects.clone())
    }

    /// Whether no listing was ever made or handed over.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every listing: (prefix, delimited, made at, objects).
    pub(super) fn iter(&self) -> impl Iterator<Item = (&str, bool, i64, &[ObjectInfo])> {
        self.entries.iter().map(|((prefix, delimited), (at, objects))| (prefix.as_str(), *delimited, *at, &objects[..]))
    }

    /// Takes a listing made elsewhere (`handed_over`: see the field).
    pub(super) fn insert(&mut self, prefix: String, delimited: bool, at: i64, objects: Vec<ObjectInfo>) {
        self.entries.insert((prefix, delimited), (at, Rc::new(objects)));
    }

    pub(super) fn set_handed_over(&mut self) {
        self.handed_over = true;
    }

    /// The listing of `prefix` as last made (with `delimiter` `/` or none).
    pub fn get(&self, prefix: &str, delimited: bool) -> Option<&[ObjectInfo]> {
        self.entries.get(&(prefix.to_owned(), delimited)).map(|(_, objects)| &objects[..])
    }

    /// Forgets the listings under `agents/` (the agent's own folders), e.g.
    /// after the agent wrote a file; shared layers keep theirs.
    pub fn invalidate_agent_folders(&mut self) {
        self.entries.retain(|(prefix, _), _| !prefix.starts_with("agents/"));
    }

    /// Forgets every listing.
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

/// The listings of `wants`, in order: fresh ones from the cache, the due
/// ones fetched concurrently (one round trip) and cached. Returns them with
/// the number of R2 operations made.
pub async fn list_due<S: ObjectStore>(
    store: &S,
    cache: &mut ListingCache,
    wants: &[Want<'_>],
    now_ms: i64,
) -> Result<(Vec<Rc<Vec<ObjectInfo>>>, u32), StorageError> {
    let cached: Vec<Option<Rc<Vec<ObjectInfo>>>> = wants.iter().map(|w| cache.fresh(w, now_ms)).collect();
    // A handed-over cache serves one load as it is; later ones keep the TTLs.
    cache.handed_over = false;
    let due =
        wants.iter().zip(&cached).filter(|(_, c)| c.is_none()).map(|(w, _)| list_all(store, w.prefix, w.delimiter));
    let mut fetched = futures::future::join_all(due).await.into_iter();
    let mut ops = 0;
    let mut out = Vec::with_capacity(wants.len());
    for (want, cached) in wants.iter().zip(cached) {
        let listing = match cached {
            Some(l) => l,
            None => {
                let (objects, n) = fetched.next().ok_or_else(|| StorageError("listing missing".into()))??;
                ops += n;
                let l = Rc::new(objects);
                cache.entries.insert((want.prefix.to_owned(), want.delimiter.is_some()), (now_ms, l.clone()));
                l
            }
        };
        out.push(listing);
    }
    Ok((out, ops))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::MemStore;
    use futures::executor::block_on;

    #[test]
    fn due_listings_are_made_fresh_ones_reused() {
        let s = MemStore::default();
        s.put_text("agents/a/SOUL.md", "x");
        s.put_text("skills/x/SKILL.md", "y");
        let mut cache = ListingCache::default();
        let wants = [
            Want { prefix: "agents/a/", delimiter: Some("/"), ttl_ms: 0 },
            Want { prefix: "skills/", delimiter: None, ttl_ms: SHARED_LAYER_TTL_MS },
        ];
        let (l, ops) = block_on(list_due(&s, &mut cache, &wants, 0)).unwrap();
        assert_eq!((l[0].len(), l[1].len(), ops), (1, 1, 2));
        let (_, ops) = block_on(list_due(&s, &mut cache, &wants, 1_000)).unwrap();
        assert_eq!(ops, 1, "only the every-turn listing");
        let (_, ops) = block_on(list_due(&s, &mut cache, &wants, SHARED_LAYER_TTL_MS)).unwrap();
        assert_eq!(ops, 2, "the shared listing expired");
        cache.invalidate_agent_folders();
        let (_, ops) = block_on(list_due(&s, &mut cache, &wants, SHARED_LAYER_TTL_MS + 1)).unwrap();
        assert_eq!(ops, 1, "shared layers survive the agent's own writes");
    }
}
