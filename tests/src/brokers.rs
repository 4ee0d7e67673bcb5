//! Message brokers for the broker transports' tests: a `nats-server` or a `mosquitto` started
//! on a free loopback port (Debian's packages, installed by `.ci/install/brokers.sh`), stopped
//! on drop.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `nats-server` on 127.0.0.1; killed on drop.
pub struct Nats {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl Nats {
    /// Starts `nats-server -a 127.0.0.1 -p PORT` and waits (up to 10 s) until it accepts
    /// connections. `None` after [`crate::skip`] (a failure under `CI=true`) when
    /// `nats-server` is not installed.
    ///
    /// # Panics
    /// When it starts but never listens.
    pub fn start() -> Option<Nats> {
        let installed = Command::new("nats-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !installed {
            crate::skip("nats-server is not installed (.ci/install/brokers.sh)");
            return None;
        }
        let port = free_port();
        let child = Command::new("nats-server")
            .args(["-a", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server starts");
        let nats = Nats { child, port };
        let until = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < until,
                "nats-server never listened on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(nats)
    }

    /// Its URL, `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A running `mosquitto` on 127.0.0.1 with a configuration of its own (anonymous clients, no
/// persistence, `$SYS` topics every second), in the foreground; killed on drop.
pub struct Mosquitto {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    dir: std::path::PathBuf,
}

/// Where Debian installs the broker (`/usr/sbin`, often not on a user's `PATH`).
fn mosquitto_bin() -> Option<&'static str> {
    ["mosquitto", "/usr/sbin/mosquitto"]
        .into_iter()
        .find(|bin| {
            Command::new(bin)
                .arg("-h")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok()
        })
}

impl Mosquitto {
    /// Starts `mosquitto -c CONFIG` listening on 127.0.0.1 only and waits (up to 10 s) until
    /// it accepts connections. `None` after [`crate::skip`] (a failure under `CI=true`) when
    /// `mosquitto` is not installed.
    ///
    /// # Panics
    /// When it starts but never listens.
    pub fn start() -> Option<Mosquitto> {
        Mosquitto::start_on(free_port())
    }

    /// [`start`](Mosquitto::start) on `port` (a broker started again where one was stopped).
    ///
    /// # Panics
    /// When it starts but never listens.
    pub fn start_on(port: u16) -> Option<Mosquitto> {
        let Some(bin) = mosquitto_bin() else {
            crate::skip("mosquitto is not installed (.ci/install/brokers.sh)");
            return None;
        };
        let dir =
            std::env::temp_dir().join(format!("rpcwire-mosquitto-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        let config = dir.join("mosquitto.conf");
        // `$SYS` topics every second: tests read the broker's count of connected clients there.
        let text = format!(
            "listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\nsys_interval 1\n"
        );
        std::fs::write(&config, text).expect("the configuration written");
        let child = Command::new(bin)
            .arg("-c")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("mosquitto starts");
        let broker = Mosquitto { child, port, dir };
        let until = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < until, "mosquitto never listened on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(broker)
    }

    /// Its URL, `mqtt://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("mqtt://127.0.0.1:{}", self.port)
    }
}

impl Drop for Mosquitto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A loopback port free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}
