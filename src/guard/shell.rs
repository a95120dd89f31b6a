//! What a shell command writes, as far as its words say: the targets of redirections,
//! of `tee`, `touch`, `mkdir`, `rm` and the like, and the destination of `cp`, `mv`,
//! `ln` and `install`, followed through `cd`. A heuristic by nature (a script, `$VAR`
//! or a program's own writes are not seen), which docs/guards.md says; the paths it
//! finds are judged exactly.

/// Files every command may write: the process's own streams and the bit bucket.
const ALWAYS_WRITABLE: [&str; 5] = [
    "/dev/null",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
    "/dev/fd",
];

/// Programs every argument of which (but options) is a path they write or remove.
const WRITES_EACH: [&str; 7] = ["rm", "rmdir", "touch", "mkdir", "tee", "truncate", "shred"];
/// Programs whose last argument (or `-t DIR`) is where they write.
const WRITES_LAST: [&str; 4] = ["cp", "mv", "ln", "install"];
/// Words that run the command after them.
const PREFIXES: [&str; 7] = ["sudo", "env", "command", "nohup", "time", "exec", "nice"];

/// `path` made absolute against `cwd`, `.` and `..` resolved by their text. A path
/// that starts at the home directory (`~`) is kept as written: it is outside any
/// absolute writable path.
pub fn absolute(path: &str, cwd: &str) -> String {
    if path.starts_with('~') {
        return path.to_string();
    }
    let joined = match path.starts_with('/') {
        true => path.to_string(),
        false => format!("{cwd}/{path}"),
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Whether `path` is `dir` or under it.
pub fn under(path: &str, dir: &str) -> bool {
    let dir = dir.trim_end_matches('/');
    dir.is_empty() || path == dir || path.starts_with(&format!("{dir}/"))
}

/// The absolute paths `command`, run in `cwd`, writes by its words, but those every
/// command may write. Words with a `$` are left out: their value is not known here.
pub fn written_paths(command: &str, cwd: &str) -> Vec<String> {
    let mut cwd = cwd.to_string();
    let mut paths = Vec::new();
    for segment in segments(command) {
        let (words, redirected) = (&segment.words, &segment.redirected);
        let mut written: Vec<&str> = redirected.iter().map(String::as_str).collect();
        let program_at = words
            .iter()
            .position(|w| !w.contains('=') && !PREFIXES.contains(&w.as_str()));
        if let Some(at) = program_at {
            let program = words[at].rsplit('/').next().unwrap_or_default();
            let args: Vec<&str> = words[at + 1..].iter().map(String::as_str).collect();
            let operands: Vec<&str> = args
                .iter()
                .copied()
                .filter(|a| !a.starts_with('-'))
                .collect();
            if program == "cd" {
                if let Some(dir) = operands.first().filter(|d| !d.contains('$')) {
                    cwd = absolute(dir, &cwd);
                }
                continue;
            }
            if WRITES_EACH.contains(&program) {
                written.extend(operands);
            } else if WRITES_LAST.contains(&program) {
                let target_dir = args.windows(2).find(|w| w[0] == "-t").map(|w| w[1]);
                let last = operands.last().copied().filter(|_| operands.len() > 1);
                written.extend(target_dir.or(last));
            } else if program == "dd" {
                written.extend(args.iter().filter_map(|a| a.strip_prefix("of=")));
            }
        }
        for word in written {
            if word.contains('$') || word.is_empty() {
                continue;
            }
            let path = absolute(word, &cwd);
            if !ALWAYS_WRITABLE.iter().any(|w| under(&path, w)) {
                paths.push(path);
            }
        }
    }
    paths
}

/// One simple command: its words and the files it redirects output to.
#[derive(Debug, Default, PartialEq)]
struct Segment {
    words: Vec<String>,
    redirected: Vec<String>,
}

/// Splits `command` into simple commands at `;`, `&&`, `||`, `|`, `&`, newlines and
/// parentheses, unquoting words (single and double quotes, backslashes).
fn segments(command: &str) -> Vec<Segment> {
    let mut segments = vec![Segment::default()];
    let mut chars = command.chars().peekable();
    let mut word: Option<String> = None;
    let mut redirect_next = false;
    let finish =
        |word: &mut Option<String>, redirect_next: &mut bool, segments: &mut Vec<Segment>| {
            if let Some(w) = word.take() {
                let segment = segments.last_mut().expect("one segment at least");
                match std::mem::take(redirect_next) {
                    true => segment.redirected.push(w),
                    false => segment.words.push(w),
                }
            }
        };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    w.push(q);
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => w.extend(chars.next()),
                        q => w.push(q),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            '>' => {
                // `2>`, `&>`: the descriptor before it is not a word.
                if word
                    .as_deref()
                    .is_some_and(|w| w.chars().all(|c| c.is_ascii_digit()))
                {
                    word = None;
                }
                finish(&mut word, &mut redirect_next, &mut segments);
                while chars.peek().is_some_and(|&n| n == '>' || n == '|') {
                    chars.next();
                }
                if chars.peek() == Some(&'&') {
                    // `>&2`: a descriptor, not a file.
                    chars.next();
                    while chars
                        .peek()
                        .is_some_and(|n| n.is_ascii_digit() || *n == '-')
                    {
                        chars.next();
                    }
                    continue;
                }
                redirect_next = true;
            }
            '&' if chars.peek() == Some(&'>') => {
                finish(&mut word, &mut redirect_next, &mut segments);
            }
            ';' | '&' | '|' | '\n' | '(' | ')' => {
                finish(&mut word, &mut redirect_next, &mut segments);
                redirect_next = false;
                segments.push(Segment::default());
            }
            c if c.is_whitespace() => finish(&mut word, &mut redirect_next, &mut segments),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    finish(&mut word, &mut redirect_next, &mut segments);
    segments.retain(|s| !s.words.is_empty() || !s.redirected.is_empty());
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_command_writes_by_its_words() {
        // (command, run in /workspace, what it writes)
        let rows: &[(&str, &[&str])] = &[
            ("echo hi > out.txt", &["/workspace/out.txt"]),
            ("echo hi >> /etc/motd", &["/etc/motd"]),
            (
                "make 2>&1 | tee build.log /tmp/b.log",
                &["/workspace/build.log", "/tmp/b.log"],
            ),
            ("cargo test > /dev/null 2>/dev/stderr", &[]),
            ("ls -la; rm -rf ../other /x", &["/other", "/x"]),
            ("cd /etc && echo x > passwd", &["/etc/passwd"]),
            ("cp -r src /opt/copy", &["/opt/copy"]),
            ("cp -t /opt a b", &["/opt"]),
            ("mv a.txt", &[]),
            ("sudo touch ~/.bashrc", &["~/.bashrc"]),
            ("echo 'a > b' \"> c\"", &[]),
            ("echo x>y", &["/workspace/y"]),
            ("echo x &> all.log", &["/workspace/all.log"]),
            ("dd if=/dev/zero of=/dev/sda", &["/dev/sda"]),
            ("echo $X > $OUT", &[]),
            ("git status && git diff", &[]),
            ("FOO=1 mkdir -p a/b", &["/workspace/a/b"]),
        ];
        for (command, expected) in rows {
            assert_eq!(
                written_paths(command, "/workspace"),
                expected.to_vec(),
                "{command}"
            );
        }
    }

    #[test]
    fn paths_resolve_by_their_text() {
        assert_eq!(absolute("../x/./y", "/workspace/src"), "/workspace/x/y");
        assert_eq!(absolute("/workspace/../etc", "/"), "/etc");
        assert!(under("/workspace/a", "/workspace/"));
        assert!(under("/workspace", "/workspace"));
        assert!(!under("/workspace2/a", "/workspace"));
        assert!(under("/anything", "/"));
    }
}
