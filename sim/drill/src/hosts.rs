//! `twice-sim drill --hosts N`: worker hosts on one machine, made of network namespaces.
//!
//! A drill on one machine proves the guards across processes; a team that outgrows one
//! machine needs them to hold across hosts, where a network can be cut between a worker and
//! the ledger while both are alive. So the drill makes hosts:
//!
//! - `twice-hub`, a namespace holding a bridge at [`HUB_ADDRESS`] (10.77.0.1/16): the
//!   "database and billing host". The drill relays two ports of it, byte for byte, to the
//!   PostgreSQL server the `--ledger` URL names and to the billing server the drill started
//!   (both on this machine's loopback). The relays' listening sockets are made inside the
//!   hub namespace, their upstream connections outside it, so nothing the drill adds is
//!   reachable from anywhere but its own namespaces.
//! - `twice-h1` … `twice-hN`, one namespace per worker host, each with a veth pair to the
//!   hub's bridge and address 10.77.1.K/16. Workers run in them with `ip netns exec`.
//!
//! A partition is `ip -n twice-hK link set eth0 down` for a seeded time, then `up`: every
//! connection of that host stalls (a new one fails at once) while its processes live on.
//! Only addresses inside namespaces the drill made, and loopback, are ever targets.
//!
//! Everything is removed on every way out: [`Hosts`] deletes its namespaces when dropped
//! (a normal end, an error, Ctrl-C or SIGTERM, which the drill turns into an orderly stop,
//! a panic), and deleting a namespace deletes its veths and bridge. A drill that was itself
//! SIGKILLed leaves them behind. Which one it was is told by [`LOCK_PATH`]: a drill across
//! hosts holds a lock on it for as long as its hosts exist, and the kernel lets go of the
//! lock when the process dies, however it dies. So the next drill that gets the lock knows
//! that any `twice-` namespace left is from a drill that is gone, removes it and says so; a
//! drill that cannot get the lock is refused, since another drill is using its hosts now.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::Command;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

/// The most worker hosts one drill makes.
pub const HOSTS_MAX: u32 = 16;
/// The hub's address: where workers reach the ledger and billing.
pub const HUB_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
/// The hosts' network.
const PREFIX_LENGTH: u8 = 16;
/// Every namespace the drill makes starts with this.
const NAMESPACE_PREFIX: &str = "twice-";
const HUB_NAMESPACE: &str = "twice-hub";
const BRIDGE: &str = "twice-br";
/// A host's end of its veth pair, inside its namespace.
const HOST_INTERFACE: &str = "eth0";
/// Held by the drill whose hosts exist (see the module's documentation). Under `/run`, which
/// only root writes and which is emptied at boot, like the namespaces themselves.
pub const LOCK_PATH: &str = "/run/twice-drill-hosts.lock";
/// How long the relay waits to connect upstream before dropping the client's connection.
const RELAY_CONNECT_MS: u64 = 5_000;

/// Why the hosts could not be made or changed.
#[derive(Debug, thiserror::Error)]
pub enum HostsError {
    #[error("--hosts makes network namespaces, which needs root: run the drill as root (or drop --hosts)")]
    NotRoot,
    #[error("--hosts needs the `ip` command (iproute2), which is not installed: apt-get install iproute2")]
    NoIp,
    #[error("another drill across hosts is running (it holds {LOCK_PATH}): wait for it to end, or stop it")]
    Busy,
    #[error("cannot open the drills' lock file {LOCK_PATH}: {0}")]
    Lock(#[source] std::io::Error),
    #[error(
        "network namespaces {names} are left from a drill that was killed and could not be removed ({detail}): \
         remove them with `{command}`"
    )]
    Leftover {
        names: String,
        command: String,
        detail: String,
    },
    #[error("`ip {command}` failed: {detail}")]
    Ip { command: String, detail: String },
    #[error("the relay to {upstream} in the hub: {source}")]
    Relay {
        upstream: SocketAddr,
        #[source]
        source: RelayError,
    },
}

/// Which step of making a relay in the hub failed.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error("cannot open the hub's namespace: {0}")]
    OpenNamespace(#[source] std::io::Error),
    #[error("cannot enter the hub's namespace: {0}")]
    EnterNamespace(#[source] nix::Error),
    #[error("cannot listen on {HUB_ADDRESS}: {0}")]
    Listen(#[source] std::io::Error),
    #[error("cannot make the listener non-blocking: {0}")]
    Nonblocking(#[source] std::io::Error),
    #[error("the thread entering the hub panicked")]
    Panicked,
    #[error("cannot read the relay's address: {0}")]
    Address(#[source] std::io::Error),
    #[error("cannot start the relay's thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// The namespace of worker host `host` (1-based).
pub fn host_namespace(host: u32) -> String {
    format!("{NAMESPACE_PREFIX}h{host}")
}

/// Worker host `host`'s address.
pub fn host_address(host: u32) -> Ipv4Addr {
    // At most HOSTS_MAX hosts, far below 255.
    Ipv4Addr::new(10, 77, 1, u8::try_from(host).unwrap_or(u8::MAX))
}

/// Runs `ip` with `arguments`; an error carries what it printed.
fn ip(arguments: &[&str]) -> Result<(), HostsError> {
    let output = Command::new("ip")
        .args(arguments)
        .output()
        .map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => HostsError::NoIp,
            _ => HostsError::Ip {
                command: arguments.join(" "),
                detail: error.to_string(),
            },
        })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(HostsError::Ip {
            command: arguments.join(" "),
            detail: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

/// The namespaces that exist now, by name.
fn namespaces() -> Result<Vec<String>, HostsError> {
    let output = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => HostsError::NoIp,
            _ => HostsError::Ip {
                command: "netns list".into(),
                detail: error.to_string(),
            },
        })?;
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect())
}

/// Removes the `twice-` namespaces a killed drill left; the caller holds the lock.
fn remove_leftovers() -> Result<(), HostsError> {
    let leftover: Vec<String> = namespaces()?
        .into_iter()
        .filter(|name| name.starts_with(NAMESPACE_PREFIX))
        .collect();
    if leftover.is_empty() {
        return Ok(());
    }
    // The hub first: deleting it deletes the bridge and the veths' hub ends.
    let mut ordered = leftover.clone();
    ordered.sort_by_key(|name| name != HUB_NAMESPACE);
    let mut failures = Vec::new();
    for name in &ordered {
        if let Err(error) = ip(&["netns", "del", name]) {
            failures.push(error.to_string());
        }
    }
    if failures.is_empty() {
        eprintln!(
            "drill: removed network namespaces {} left by a drill that was killed",
            leftover.join(", ")
        );
        return Ok(());
    }
    let command = leftover
        .iter()
        .map(|name| format!("ip netns del {name}"))
        .collect::<Vec<_>>()
        .join("; ");
    Err(HostsError::Leftover {
        names: leftover.join(", "),
        command,
        detail: failures.join("; "),
    })
}

/// A relay from a port of the hub to a server on this machine.
#[derive(Debug)]
struct Relay {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The hosts a drill made (see the module's documentation). Dropping it removes them.
#[derive(Debug)]
pub struct Hosts {
    count: u32,
    /// Namespaces made so far, in order; removed in reverse.
    made: Vec<String>,
    relays: Vec<Relay>,
    /// The lock on [`LOCK_PATH`], held while the namespaces exist. Declared last, so it is
    /// let go only after `drop` removed them.
    _lock: std::fs::File,
}

impl Hosts {
    /// Makes the hub and `count` worker hosts.
    pub fn make(count: u32) -> Result<Hosts, HostsError> {
        if !nix::unistd::geteuid().is_root() {
            return Err(HostsError::NotRoot);
        }
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(LOCK_PATH)
            .map_err(HostsError::Lock)?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(HostsError::Busy),
            Err(std::fs::TryLockError::Error(error)) => return Err(HostsError::Lock(error)),
        }
        // With the lock held, no living drill owns a `twice-` namespace.
        remove_leftovers()?;
        let mut hosts = Hosts {
            count,
            made: Vec::new(),
            relays: Vec::new(),
            _lock: lock,
        };
        // From here on, whatever fails, `hosts` is dropped and removes what was made.
        hosts.add_namespace(HUB_NAMESPACE)?;
        let hub_cidr = format!("{HUB_ADDRESS}/{PREFIX_LENGTH}");
        ip(&["-n", HUB_NAMESPACE, "link", "set", "lo", "up"])?;
        ip(&["-n", HUB_NAMESPACE, "link", "add", BRIDGE, "type", "bridge"])?;
        ip(&["-n", HUB_NAMESPACE, "addr", "add", &hub_cidr, "dev", BRIDGE])?;
        ip(&["-n", HUB_NAMESPACE, "link", "set", BRIDGE, "up"])?;
        for host in 1..=count {
            let namespace = host_namespace(host);
            hosts.add_namespace(&namespace)?;
            let hub_side = format!("twice-v{host}");
            let address = format!("{}/{PREFIX_LENGTH}", host_address(host));
            ip(&[
                "-n",
                HUB_NAMESPACE,
                "link",
                "add",
                &hub_side,
                "type",
                "veth",
                "peer",
                "name",
                HOST_INTERFACE,
                "netns",
                &namespace,
            ])?;
            ip(&["-n", HUB_NAMESPACE, "link", "set", &hub_side, "master", BRIDGE])?;
            ip(&["-n", HUB_NAMESPACE, "link", "set", &hub_side, "up"])?;
            ip(&["-n", &namespace, "addr", "add", &address, "dev", HOST_INTERFACE])?;
            ip(&["-n", &namespace, "link", "set", HOST_INTERFACE, "up"])?;
            ip(&["-n", &namespace, "link", "set", "lo", "up"])?;
        }
        Ok(hosts)
    }

    fn add_namespace(&mut self, name: &str) -> Result<(), HostsError> {
        ip(&["netns", "add", name])?;
        self.made.push(name.to_owned());
        Ok(())
    }

    pub fn count(&self) -> u32 {
        self.count
    }

    /// Cuts worker host `host` off the network.
    pub fn cut(&self, host: u32) -> Result<(), HostsError> {
        ip(&["-n", &host_namespace(host), "link", "set", HOST_INTERFACE, "down"])
    }

    /// Puts worker host `host` back on the network.
    pub fn heal(&self, host: u32) -> Result<(), HostsError> {
        ip(&["-n", &host_namespace(host), "link", "set", HOST_INTERFACE, "up"])
    }

    /// A command that runs `program` on worker host `host` (`ip netns exec`, which then
    /// becomes `program`: its process id is the program's).
    pub fn command_on(&self, host: u32, program: &std::path::Path) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &host_namespace(host)]).arg(program);
        command
    }

    /// Relays a port of the hub to `upstream` (a server on this machine's loopback) and
    /// answers the hub's address and port, where the hosts reach it.
    pub fn relay(&mut self, upstream: SocketAddr) -> Result<SocketAddr, HostsError> {
        let relay_error = |source: RelayError| HostsError::Relay { upstream, source };
        // The listening socket is made inside the hub: a socket stays in the namespace it
        // was made in, so only this short-lived thread enters the hub.
        let listener = std::thread::spawn(|| -> Result<std::net::TcpListener, RelayError> {
            let namespace =
                std::fs::File::open(format!("/run/netns/{HUB_NAMESPACE}")).map_err(RelayError::OpenNamespace)?;
            nix::sched::setns(namespace, nix::sched::CloneFlags::CLONE_NEWNET).map_err(RelayError::EnterNamespace)?;
            let listener =
                std::net::TcpListener::bind(SocketAddr::from((HUB_ADDRESS, 0))).map_err(RelayError::Listen)?;
            listener.set_nonblocking(true).map_err(RelayError::Nonblocking)?;
            Ok(listener)
        })
        .join()
        .map_err(|_| relay_error(RelayError::Panicked))?
        .map_err(relay_error)?;
        let address = listener
            .local_addr()
            .map_err(|error| relay_error(RelayError::Address(error)))?;
        let (stop, stopped) = oneshot::channel();
        // The relay runs on a thread and runtime of its own, so that the supervisor's
        // synchronous ledger reads never hold up the bytes it carries.
        let thread = std::thread::Builder::new()
            .name("twice-drill-relay".into())
            .spawn(move || relay_until(listener, upstream, stopped))
            .map_err(|error| relay_error(RelayError::Thread(error)))?;
        self.relays.push(Relay {
            stop: Some(stop),
            thread: Some(thread),
        });
        Ok(address)
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        self.relays.clear();
        for name in self.made.drain(..).rev() {
            if let Err(error) = ip(&["netns", "del", &name]) {
                eprintln!("drill: could not remove network namespace {name}: {error}");
            }
        }
    }
}

/// Accepts connections on `listener` (in the hub) and carries each one's bytes to and from
/// a new connection to `upstream`, until `stopped`.
fn relay_until(listener: std::net::TcpListener, upstream: SocketAddr, stopped: oneshot::Receiver<()>) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
        eprintln!("drill: the relay to {upstream} could not start its runtime");
        return;
    };
    runtime.block_on(async move {
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
            eprintln!("drill: the relay to {upstream} could not use its listener");
            return;
        };
        tokio::pin!(stopped);
        loop {
            tokio::select! {
                _ = &mut stopped => return,
                accepted = listener.accept() => {
                    let Ok((mut client, _)) = accepted else { continue };
                    tokio::spawn(async move {
                        let connected = tokio::time::timeout(
                            std::time::Duration::from_millis(RELAY_CONNECT_MS),
                            tokio::net::TcpStream::connect(upstream),
                        )
                        .await;
                        if let Ok(Ok(mut server)) = connected {
                            let _ = client.set_nodelay(true);
                            let _ = server.set_nodelay(true);
                            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                        }
                    });
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_have_distinct_addresses_on_the_hubs_network() {
        assert_eq!(host_namespace(3), "twice-h3");
        assert_eq!(host_address(1), Ipv4Addr::new(10, 77, 1, 1));
        assert_eq!(host_address(HOSTS_MAX), Ipv4Addr::new(10, 77, 1, 16));
        let addresses: std::collections::BTreeSet<Ipv4Addr> = (1..=HOSTS_MAX).map(host_address).collect();
        assert_eq!(addresses.len(), HOSTS_MAX as usize);
        assert!(!addresses.contains(&HUB_ADDRESS));
    }

    /// Whether this process may make namespaces (root, with `ip`); otherwise the test skips.
    fn hosts_can_be_made() -> bool {
        nix::unistd::geteuid().is_root() && Command::new("ip").arg("-V").output().is_ok()
    }

    #[test]
    fn hosts_left_by_a_killed_drill_are_removed_and_a_running_drills_are_not() {
        if !hosts_can_be_made() {
            eprintln!("skipped: making network namespaces needs root and `ip`");
            return;
        }
        // What a SIGKILLed drill leaves: namespaces, and no one holding the lock.
        ip(&["netns", "add", "twice-h9"]).expect("a namespace is made");
        let hosts = Hosts::make(1).expect("the leftover is removed and the hosts made");
        let mut now = namespaces().expect("ip lists namespaces");
        now.sort();
        assert_eq!(
            now.iter()
                .filter(|name| name.starts_with(NAMESPACE_PREFIX))
                .collect::<Vec<_>>(),
            ["twice-h1", "twice-hub"]
        );
        // While a drill holds its hosts, another is refused and removes nothing.
        assert!(matches!(Hosts::make(1), Err(HostsError::Busy)));
        assert!(
            namespaces()
                .expect("ip lists namespaces")
                .iter()
                .any(|name| name == "twice-hub")
        );
        drop(hosts);
        let left: Vec<String> = namespaces()
            .expect("ip lists namespaces")
            .into_iter()
            .filter(|name| name.starts_with(NAMESPACE_PREFIX))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn a_relay_that_cannot_be_made_names_its_upstream_and_the_step() {
        let upstream: SocketAddr = "127.0.0.1:7879".parse().expect("an address");
        let error = HostsError::Relay {
            upstream,
            source: RelayError::Listen(std::io::Error::from(std::io::ErrorKind::AddrInUse)),
        };
        let shown = error.to_string();
        assert!(
            shown.starts_with(&format!(
                "the relay to 127.0.0.1:7879 in the hub: cannot listen on {HUB_ADDRESS}: "
            )),
            "{shown}"
        );
        let step = std::error::Error::source(&error).expect("the step is kept");
        assert!(std::error::Error::source(step).is_some(), "and the I/O error under it");
    }
}
