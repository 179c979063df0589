//! Atomic writes of results: single files written beside their target and renamed over
//! it, and whole folders committed with a manifest of every file's size and hash, under a
//! lock file that refuses a second writer. Leftovers of writers that died are cleared.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::digest::Fnv;
use crate::spill::Body;

/// Writes `bytes` to `path` atomically: into a temporary file beside it
/// (`.NAME.PID.XXXXXX.tmp`, by tempfile, removed if anything fails), synced, then renamed
/// over `path` (`persist`). Temporary files of `NAME` left by writers that were killed
/// (their process is gone) are removed first.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("no file name"))?
        .to_string_lossy();
    let prefix = format!(".{name}.");
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            let f = e.file_name().to_string_lossy().into_owned();
            let pid = f
                .strip_prefix(&prefix)
                .filter(|rest| rest.ends_with(".tmp"))
                .and_then(|rest| rest.split('.').next()?.parse::<u32>().ok());
            if pid.is_some_and(|p| !alive(p)) {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    let temp_prefix = format!("{prefix}{}.", std::process::id());
    let mut b = tempfile::Builder::new();
    b.prefix(&temp_prefix).suffix(".tmp");
    // An ordinary file (0666 less the umask, as any program's), not a temporary file's 0600.
    #[cfg(unix)]
    b.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut f = b.tempfile_in(dir)?;
    f.write_all(bytes)?;
    f.as_file().sync_all()?;
    f.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The manifest a committed results folder carries: every file's size and FNV-1a hash.
pub const MANIFEST: &str = "manifest.json";

/// Writes the files `files` (name, bytes) as the whole content of folder `dir`, so that
/// `dir` is at every moment absent, the complete old folder, or the complete new one:
/// the files and a [`MANIFEST`] listing them go into a fresh temporary folder beside
/// `dir`, each synced, which then replaces `dir` whole (the old folder is renamed aside
/// and removed). A lock file beside `dir` refuses a second writer while one is at work;
/// leftovers of writers that died (temporary folders, old folders, locks) are removed.
///
/// # Errors
/// Another live process is writing `dir` (the message says which lock), or any I/O error
/// (the temporary folder is removed; `dir` is untouched).
pub fn commit_dir(dir: &Path, files: &[(&str, &[u8])]) -> io::Result<()> {
    let files: Vec<(&str, Body<'_>)> = files.iter().map(|&(n, b)| (n, Body::Bytes(b))).collect();
    commit_files(dir, &files)
}

/// [`commit_dir`] with files that may be open files as well as bytes (a time series
/// spilled to disk is copied, never read into memory whole).
///
/// # Errors
/// As [`commit_dir`].
pub fn commit_files(dir: &Path, files: &[(&str, Body<'_>)]) -> io::Result<()> {
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(parent)?;
    let name = dir
        .file_name()
        .ok_or_else(|| io::Error::other("no folder name"))?
        .to_string_lossy()
        .into_owned();
    if fs::symlink_metadata(dir).is_ok_and(|m| !m.is_dir()) {
        return Err(io::Error::other(format!(
            "{} exists and is not a folder; it is left as it is",
            dir.display()
        )));
    }
    let pid = std::process::id();
    let lock = parent.join(format!(".{name}.lock"));
    // Held by a [`DirLock`] of this process for the whole run, or taken for the commit.
    let ours = HELD
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .contains(&lock);
    if !ours {
        take_lock(&lock, pid)?;
    }
    let r = (|| {
        remove_leftovers(parent, &name);
        let tmp = parent.join(format!(".{name}.tmp-{pid}"));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir(&tmp)?;
        let write_all = || -> io::Result<()> {
            let mut manifest = serde_json::Map::new();
            for (file, body) in files {
                let mut f =
                    io::BufWriter::with_capacity(1 << 16, fs::File::create(tmp.join(file))?);
                let (mut len, mut h) = (0u64, Fnv::default());
                body.for_each_chunk(|c| {
                    len += c.len() as u64;
                    h.update(c);
                    f.write_all(c)
                })?;
                f.into_inner()
                    .map_err(io::IntoInnerError::into_error)?
                    .sync_all()?;
                manifest.insert(
                    (*file).to_string(),
                    serde_json::json!({"bytes": len, "fnv1a64": format!("{:016x}", h.finish())}),
                );
            }
            let mut m = serde_json::to_vec_pretty(&serde_json::Value::Object(manifest))
                .map_err(io::Error::other)?;
            m.push(b'\n');
            let mut f = fs::File::create(tmp.join(MANIFEST))?;
            f.write_all(&m)?;
            f.sync_all()?;
            if fs::symlink_metadata(dir).is_ok() {
                let old = parent.join(format!(".{name}.old-{pid}"));
                fs::rename(dir, &old)?;
                fs::rename(&tmp, dir)?;
                fs::remove_dir_all(&old)
            } else {
                fs::rename(&tmp, dir)
            }
        };
        let r = write_all();
        if r.is_err() {
            let _ = fs::remove_dir_all(&tmp);
        }
        r
    })();
    if !ours {
        let _ = fs::remove_file(&lock);
    }
    r
}

/// The locks this process holds through [`DirLock`]s.
static HELD: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The lock of a results folder held for as long as this value lives, from before a run
/// starts until its results are committed: a second writer of the same folder is refused
/// when it starts, not after its whole simulation. [`commit_files`] into the folder by
/// this process then uses this lock; dropping it removes the lock file.
#[derive(Debug)]
pub struct DirLock {
    lock: PathBuf,
}

impl DirLock {
    /// Takes the lock of folder `dir` (the file `.NAME.lock` beside it, which
    /// [`commit_files`] takes too); the parent folder is created if need be.
    ///
    /// # Errors
    /// Another live process holds it (the message names the lock file), this process holds
    /// it already, or an I/O error.
    pub fn take(dir: &Path) -> io::Result<Self> {
        let parent = dir
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        fs::create_dir_all(parent)?;
        let name = dir
            .file_name()
            .ok_or_else(|| io::Error::other("no folder name"))?
            .to_string_lossy();
        let lock = parent.join(format!(".{name}.lock"));
        let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
        if held.contains(&lock) {
            return Err(io::Error::other(format!(
                "this process is already writing {} (lock {})",
                dir.display(),
                lock.display()
            )));
        }
        take_lock(&lock, std::process::id())?;
        held.push(lock.clone());
        Ok(Self { lock })
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
        held.retain(|l| *l != self.lock);
        let _ = fs::remove_file(&self.lock);
    }
}

/// Whether every file the [`MANIFEST`] of `dir` lists is there with its size and hash.
pub fn verify_dir(dir: &Path) -> bool {
    let Ok(text) = fs::read(dir.join(MANIFEST)) else {
        return false;
    };
    let Ok(serde_json::Value::Object(m)) = serde_json::from_slice::<serde_json::Value>(&text)
    else {
        return false;
    };
    // File by file in pieces: a time series can be larger than memory.
    m.iter().all(|(file, v)| {
        let Ok(f) = fs::File::open(dir.join(file)) else {
            return false;
        };
        let (mut len, mut h) = (0u64, Fnv::default());
        Body::File(&f)
            .for_each_chunk(|c| {
                len += c.len() as u64;
                h.update(c);
                Ok(())
            })
            .is_ok()
            && v["bytes"].as_u64() == Some(len)
            && v["fnv1a64"].as_str() == Some(format!("{:016x}", h.finish()).as_str())
    })
}

/// Whether process `pid` is alive (Linux: /proc; elsewhere assumed alive). A killed process
/// that no one has reaped yet (a zombie: a Dask worker whose nanny was killed with it, in a
/// container whose first process does not reap) still has its /proc entry, but writes
/// nothing more: its state letter after the command name says so.
fn alive(pid: u32) -> bool {
    if !cfg!(target_os = "linux") {
        return true;
    }
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| matches!(state, "Z" | "X" | "x")),
        Err(_) => Path::new(&format!("/proc/{pid}")).exists(),
    }
}

/// Creates `lock` holding `pid`; a lock left by a dead process is taken over.
fn take_lock(lock: &Path, pid: u32) -> io::Result<()> {
    for _ in 0..2 {
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(lock)
        {
            Ok(mut f) => {
                // A lock whose pid could not be written (a full disk) would refuse the
                // next writer for a while: remove it with the error.
                let r = f.write_all(pid.to_string().as_bytes());
                if r.is_err() {
                    let _ = fs::remove_file(lock);
                }
                return r;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let holder = fs::read_to_string(lock)
                    .ok()
                    .and_then(|t| t.trim().parse::<u32>().ok());
                // A lock without a pid yet belongs to a writer that has just created it,
                // unless it is old.
                let fresh = || {
                    fs::metadata(lock)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age.as_secs() < 10)
                };
                match holder {
                    Some(h) if h != pid && alive(h) => {
                        return Err(io::Error::other(format!(
                            "process {h} is writing the same results folder (lock {}); \
                             wait for it or choose another --out",
                            lock.display()
                        )));
                    }
                    None if fresh() => {
                        return Err(io::Error::other(format!(
                            "another process is starting to write the same results folder \
                             (lock {}); wait for it or choose another --out",
                            lock.display()
                        )));
                    }
                    _ => {
                        let _ = fs::remove_file(lock);
                    }
                }
            }
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "cannot take the lock {}",
        lock.display()
    )))
}

/// Removes temporary and old folders of `name` left in `parent` by processes that died. A
/// writer killed between its two renames leaves no folder `name`: its complete new
/// folder (or else the old one) is put back first.
fn remove_leftovers(parent: &Path, name: &str) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    let entries: Vec<_> = entries.flatten().collect();
    let dir = parent.join(name);
    if fs::symlink_metadata(&dir).is_err() {
        for kind in ["tmp", "old"] {
            let prefix = format!(".{name}.{kind}-");
            if let Some(e) = entries.iter().find(|e| {
                let f = e.file_name().to_string_lossy().into_owned();
                f.strip_prefix(&prefix)
                    .and_then(|p| p.parse::<u32>().ok())
                    .is_some_and(|p| !alive(p))
                    && verify_dir(&e.path())
            }) && fs::rename(e.path(), &dir).is_ok()
            {
                break;
            }
        }
    }
    for e in entries {
        let f = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = f
            .strip_prefix(&format!(".{name}.tmp-"))
            .or_else(|| f.strip_prefix(&format!(".{name}.old-")))
        else {
            continue;
        };
        if rest.parse::<u32>().is_ok_and(|p| !alive(p)) {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new, empty scratch folder, removed when the guard is dropped (at the end of the
    /// test, passed or failed).
    fn scratch(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("dcsim-commit-{name}-"))
            .tempdir()
            .unwrap()
    }

    /// A file written atomically is readable by others as any program's file is (0644
    /// under the usual umask 022), not 0600 as a temporary file is created.
    #[cfg(unix)]
    #[test]
    fn atomic_files_have_ordinary_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("mode");
        let p = dir.path().join("report.html");
        atomic_write(&p, b"x").unwrap();
        let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        // Whatever the umask, others may read unless it forbids it; never 0600 by itself.
        assert_ne!(mode, 0o600, "{mode:o}");
        assert_eq!(mode & 0o600, 0o600, "{mode:o}");
    }

    /// A commit replaces the folder whole (an old file not in the new set is gone), lists
    /// every file in the manifest, and a changed file fails verification.
    #[test]
    fn commit_replaces_the_folder_whole_and_verifies() {
        let dir = scratch("whole");
        let d = dir.path();
        let out = d.join("run");
        commit_dir(&out, &[("a.csv", b"1,2\n"), ("old.csv", b"x")]).unwrap();
        assert!(verify_dir(&out));
        commit_dir(&out, &[("a.csv", b"3,4\n"), ("summary.json", b"{}")]).unwrap();
        assert!(!out.join("old.csv").exists());
        assert_eq!(fs::read(out.join("a.csv")).unwrap(), b"3,4\n");
        assert!(verify_dir(&out));
        fs::write(out.join("a.csv"), b"3,").unwrap();
        assert!(!verify_dir(&out), "a truncated file");
        let names: Vec<_> = fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["run"], "no temporary, old folder or lock left");
        dir.close().unwrap();
    }

    /// A lock held by a live process refuses the commit and leaves the folder alone; one
    /// left by a dead process is taken over, and its temporary folder removed.
    #[test]
    fn a_live_writer_is_refused_and_a_dead_ones_leftovers_are_cleared() {
        let dir = scratch("lock");
        let d = dir.path();
        let out = d.join("run");
        commit_dir(&out, &[("a.csv", b"old")]).unwrap();
        // pid 1 is always alive.
        fs::write(d.join(".run.lock"), "1").unwrap();
        let e = commit_dir(&out, &[("a.csv", b"new")]).unwrap_err();
        assert!(e.to_string().contains("process 1 is writing"), "{e}");
        assert_eq!(fs::read(out.join("a.csv")).unwrap(), b"old");
        // A pid above Linux's limit is never alive.
        let dead = 4_194_304 + 7;
        fs::write(d.join(".run.lock"), dead.to_string()).unwrap();
        fs::create_dir(d.join(format!(".run.tmp-{dead}"))).unwrap();
        commit_dir(&out, &[("a.csv", b"new")]).unwrap();
        assert_eq!(fs::read(out.join("a.csv")).unwrap(), b"new");
        let names: Vec<_> = fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["run"]);
        dir.close().unwrap();
    }

    /// A process killed and not yet reaped holds no lock: its zombie is not alive.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_zombie_is_not_alive() {
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(alive(pid));
        child.kill().unwrap();
        // Not waited for yet: a zombie until `wait`.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while alive(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!alive(pid), "a killed, unreaped child counts as alive");
        assert!(
            Path::new(&format!("/proc/{pid}")).exists(),
            "reaped too early"
        );
        child.wait().unwrap();
    }

    /// A folder locked before its run starts refuses another writer at once; this
    /// process's own commits go through and keep the lock until it is dropped.
    #[test]
    fn a_lock_held_through_a_run_refuses_others_and_admits_its_own_commits() {
        let dir = scratch("held");
        let d = dir.path();
        let out = d.join("run");
        fs::write(d.join(".run.lock"), "1").unwrap();
        let e = DirLock::take(&out).unwrap_err();
        assert!(e.to_string().contains("process 1 is writing"), "{e}");
        fs::remove_file(d.join(".run.lock")).unwrap();
        let held = DirLock::take(&out).unwrap();
        let again = DirLock::take(&out).unwrap_err();
        assert!(again.to_string().contains("already writing"), "{again}");
        commit_dir(&out, &[("a.csv", b"1")]).unwrap();
        commit_dir(&out, &[("a.csv", b"2")]).unwrap();
        assert_eq!(
            fs::read_to_string(d.join(".run.lock")).unwrap(),
            std::process::id().to_string(),
            "the commits leave the held lock in place"
        );
        drop(held);
        assert!(!d.join(".run.lock").exists());
        assert_eq!(fs::read(out.join("a.csv")).unwrap(), b"2");
        dir.close().unwrap();
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temporary() {
        let guard = tempfile::Builder::new()
            .prefix("dcsim-aw-")
            .tempdir()
            .unwrap();
        let dir = guard.path();
        let p = dir.join("x.csv");
        atomic_write(&p, b"one").unwrap();
        // A killed writer's leftover (a pid above Linux's limit is never alive).
        let dead = dir.join(format!(".x.csv.{}.a1b2c3.tmp", 4_194_304 + 7));
        fs::write(&dead, b"half").unwrap();
        atomic_write(&p, b"two").unwrap();
        assert!(!dead.exists(), "a dead writer's temporary file is removed");
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(fs::read_dir(dir).unwrap().count(), 1);
        guard.close().unwrap();
    }
}
