//! A line diff of two versions of a workspace file, as a unified diff
//! (`--- a`, `+++ b`, `@@ -l,n +l,n @@` hunks with three lines of context),
//! the form `git diff` and `patch` read.
//!
//! Myers' O((N+M)·D) algorithm over lines: workspace files are small and
//! versions usually differ in a few lines. Past [`MAX_EDITS`] differing
//! lines the search stops and the diff replaces the whole file (a correct
//! diff, just not a minimal one), so a pathological pair costs bounded time
//! and memory (the search keeps `D²` positions: at most 4 MB).

/// Edits searched for before the diff falls back to a whole replacement.
pub const MAX_EDITS: usize = 1_000;
/// Lines of unchanged context around each change.
pub const CONTEXT: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Keep,
    Del,
    Add,
}

/// The edit script turning `a` into `b` (one op per line of either).
fn script(a: &[&str], b: &[&str]) -> Vec<Op> {
    // Common head and tail are kept without searching.
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..].iter().rev().zip(b[head..].iter().rev()).take_while(|(x, y)| x == y).count();
    let (a_mid, b_mid) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let mut ops = vec![Op::Keep; head];
    ops.extend(myers(a_mid, b_mid));
    ops.extend(std::iter::repeat_n(Op::Keep, tail));
    ops
}

fn myers(a: &[&str], b: &[&str]) -> Vec<Op> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    if n == 0 || m == 0 {
        let mut ops = vec![Op::Del; a.len()];
        ops.extend(std::iter::repeat_n(Op::Add, b.len()));
        return ops;
    }
    let max = (n + m).min(MAX_EDITS as isize);
    let offset = max + 1;
    let mut v = vec![0isize; 2 * offset as usize + 1];
    // trace[d]: v over k in -d..=d before step d (what step d read).
    let mut trace: Vec<Vec<i32>> = Vec::new();
    let mut found = None;
    'outer: for d in 0..=max {
        trace.push(v[(offset - d) as usize..=(offset + d) as usize].iter().map(|x| *x as i32).collect());
        let mut k = -d;
        while k <= d {
            let i = (k + offset) as usize;
            let mut x = if k == -d || (k != d && v[i - 1] < v[i + 1]) { v[i + 1] } else { v[i - 1] + 1 };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[i] = x;
            if x >= n && y >= m {
                found = Some(d);
                break 'outer;
            }
            k += 2;
        }
    }
    let Some(d_end) = found else {
        // Too different: replace everything.
        let mut ops = vec![Op::Del; a.len()];
        ops.extend(std::iter::repeat_n(Op::Add, b.len()));
        return ops;
    };
    // Walk the trace back from (n, m).
    let (mut x, mut y) = (n, m);
    let mut rev: Vec<Op> = Vec::with_capacity((n + m) as usize);
    for d in (1..=d_end).rev() {
        let row = &trace[d as usize];
        let at = |k: isize| row.get((k + d) as usize).map_or(0, |x| *x as isize);
        let k = x - y;
        let prev_k = if k == -d || (k != d && at(k - 1) < at(k + 1)) { k + 1 } else { k - 1 };
        let prev_x = at(prev_k);
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            rev.push(Op::Keep);
            x -= 1;
            y -= 1;
        }
        if x == prev_x {
            rev.push(Op::Add);
        } else {
            rev.push(Op::Del);
        }
        x = prev_x;
        y = prev_y;
    }
    while x > 0 && y > 0 {
        rev.push(Op::Keep);
        x -= 1;
        y -= 1;
    }
    rev.reverse();
    rev
}

/// How many lines `a` → `b` removes and adds.
pub fn counts(a: &str, b: &str) -> (usize, usize) {
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let ops = script(&la, &lb);
    (ops.iter().filter(|o| **o == Op::Del).count(), ops.iter().filter(|o| **o == Op::Add).count())
}

/// The lines of `a` that `b` no longer has (removed or rewritten), in order.
pub fn removed_lines<'a>(a: &'a str, b: &str) -> Vec<&'a str> {
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let mut out = Vec::new();
    let mut ia = 0;
    for op in script(&la, &lb) {
        match op {
            Op::Keep => ia += 1,
            Op::Del => {
                out.push(la[ia]);
                ia += 1;
            }
            Op::Add => {}
        }
    }
    out
}

/// A unified diff from `a` (named `a_name`) to `b`; empty when they are equal.
pub fn unified(a_name: &str, b_name: &str, a: &str, b: &str) -> String {
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let ops = script(&la, &lb);
    if ops.iter().all(|o| *o == Op::Keep) {
        return String::new();
    }
    // Line numbers of each op in a and b.
    let mut pos = Vec::with_capacity(ops.len());
    let (mut ia, mut ib) = (0usize, 0usize);
    for op in &ops {
        pos.push((ia, ib));
        match op {
            Op::Keep => {
                ia += 1;
                ib += 1;
            }
            Op::Del => ia += 1,
            Op::Add => ib += 1,
        }
    }
    let mut out = format!("--- {a_name}\n+++ {b_name}\n");
    let mut i = 0;
    while i < ops.len() {
        if ops[i] == Op::Keep {
            i += 1;
            continue;
        }
        // A hunk: from CONTEXT lines before this change to CONTEXT after the
        // last change that is within 2 × CONTEXT of the previous one.
        let start = i.saturating_sub(CONTEXT);
        let mut end = i;
        let mut j = i;
        while j < ops.len() {
            if ops[j] != Op::Keep {
                end = j;
                j += 1;
                continue;
            }
            let run = ops[j..].iter().take_while(|o| **o == Op::Keep).count();
            if j + run < ops.len() && run <= 2 * CONTEXT {
                j += run;
                continue;
            }
            break;
        }
        let stop = (end + 1 + CONTEXT).min(ops.len());
        let (a0, b0) = pos[start];
        let a_len = ops[start..stop].iter().filter(|o| **o != Op::Add).count();
        let b_len = ops[start..stop].iter().filter(|o| **o != Op::Del).count();
        let line = |at: usize, len: usize| if len == 0 { at } else { at + 1 };
        out.push_str(&format!("@@ -{},{a_len} +{},{b_len} @@\n", line(a0, a_len), line(b0, b_len)));
        for k in start..stop {
            let (pa, pb) = pos[k];
            match ops[k] {
                Op::Keep => out.push_str(&format!(" {}\n", la[pa])),
                Op::Del => out.push_str(&format!("-{}\n", la[pa])),
                Op::Add => out.push_str(&format!("+{}\n", lb[pb])),
            }
        }
        i = stop;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies a unified diff to `a` (what `patch` would do), to check it.
    fn apply(a: &str, diff: &str) -> String {
        let la: Vec<&str> = a.lines().collect();
        let mut out: Vec<String> = Vec::new();
        let mut at = 0usize;
        for line in diff.lines().skip(2) {
            if let Some(h) = line.strip_prefix("@@ -") {
                let start: usize = h.split(',').next().unwrap().parse().unwrap();
                let len: usize = h.split(',').nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
                let start = if len == 0 { start } else { start - 1 };
                while at < start {
                    out.push(la[at].to_owned());
                    at += 1;
                }
            } else if let Some(l) = line.strip_prefix(' ') {
                assert_eq!(la[at], l);
                out.push(l.to_owned());
                at += 1;
            } else if let Some(l) = line.strip_prefix('-') {
                assert_eq!(la[at], l);
                at += 1;
            } else if let Some(l) = line.strip_prefix('+') {
                out.push(l.to_owned());
            }
        }
        out.extend(la[at..].iter().map(|s| s.to_string()));
        out.join("\n")
    }

    #[test]
    fn a_diff_shows_what_changed_and_applies_back() {
        let a = "# Memory\n- tea\n- coffee\n- cats\n\n## People\n- Ana\n- Luis\n- Pat\n- Olga\n- Kim\n- Lee\n";
        let b =
            "# Memory\n- green tea\n- coffee\n- cats\n\n## People\n- Ana\n- Luis\n- Pat\n- Olga\n- Kim\n- Lee\n- Zoe\n";
        let d = unified("a/MEMORY.md", "b/MEMORY.md", a, b);
        assert!(
            d.starts_with("--- a/MEMORY.md\n+++ b/MEMORY.md\n@@ -1,5 +1,5 @@\n # Memory\n-- tea\n+- green tea\n"),
            "{d}"
        );
        assert!(d.contains("+- Zoe\n") && d.matches("@@").count() == 4, "two hunks: {d}");
        assert_eq!(apply(a, &d), b.trim_end());
        assert_eq!(counts(a, b), (1, 2));
        assert_eq!(removed_lines(a, b), vec!["- tea"]);
        assert_eq!(unified("a", "b", a, a), "");
    }

    #[test]
    fn diffs_from_and_to_nothing_and_of_shuffled_lines_apply() {
        let cases = [
            ("", "one\ntwo\n"),
            ("one\ntwo\n", ""),
            ("a\nb\nc\nd\ne\nf\n", "f\ne\nd\nc\nb\na\n"),
            ("x\n", "x\ny\n"),
            ("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "1\n2\nthree\n4\n5\n6\n7\n8\nnine\n10\n"),
        ];
        for (a, b) in cases {
            let d = unified("a", "b", a, b);
            assert_eq!(apply(a, &d), b.trim_end(), "{a:?} -> {b:?}:\n{d}");
        }
    }

    #[test]
    fn very_different_files_are_replaced_whole_in_bounded_time() {
        let a: String = (0..3000).map(|i| format!("a{i}\n")).collect();
        let b: String = (0..3000).map(|i| format!("b{i}\n")).collect();
        let d = unified("a", "b", &a, &b);
        assert_eq!(apply(&a, &d), b.trim_end());
        assert_eq!(counts(&a, &b), (3000, 3000));
    }
}
