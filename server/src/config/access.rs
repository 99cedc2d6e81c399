//! Who may call what: the HTTP port's host allowlist and whether it serves every RPC (`[http]`),
//! the bearer token for mutating RPCs (`[auth]`), and TLS for a TCP gRPC listener (`[tls]`).

use std::path::PathBuf;

use serde::Deserialize;

use super::ListenAddr;

/// `[http]`: what the HTTP port (browsers, scrapers) may reach.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpSection {
    /// Host names (the `Host` header or `:authority` without its port) the HTTP port answers;
    /// `"*"` answers any.
    pub allowed_hosts: Vec<String>,
    /// Serve every gRPC method on the HTTP port instead of the read-only ones only.
    pub serve_all_rpcs: bool,
    /// `/metrics` and `/healthz` answer any host (scrapers and probes name the port by address
    /// or service-discovery name; both pages are read-only and carry no client data); false puts
    /// them behind `allowed_hosts` too.
    pub scrapes_any_host: bool,
}

impl Default for HttpSection {
    fn default() -> Self {
        HttpSection {
            allowed_hosts: ["localhost", "127.0.0.1", "[::1]"]
                .map(String::from)
                .to_vec(),
            serve_all_rpcs: false,
            scrapes_any_host: true,
        }
    }
}

impl HttpSection {
    /// Whether a request naming `host` (with or without a port) may be answered.
    pub fn allows_host(&self, host: &str) -> bool {
        let name = host_name(host);
        self.allowed_hosts
            .iter()
            .any(|allowed| allowed == "*" || allowed.eq_ignore_ascii_case(name))
    }

    pub(super) fn validate(&self) -> Result<(), (String, String)> {
        for host in &self.allowed_hosts {
            if host.is_empty() || host_name(host) != host {
                return Err((
                    "http.allowed_hosts".into(),
                    format!("{host:?} is not a host name: write a name or address without a port, such as \"localhost\", \"10.0.0.5\" or \"[::1]\""),
                ));
            }
        }
        Ok(())
    }
}

/// `host`, `host:port`, `[v6]` or `[v6]:port` → the name without the port.
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    }
}

/// `[auth]`: a shared secret for the mutating RPCs on a TCP gRPC listener.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct AuthSection {
    /// A file holding the token (surrounding whitespace is ignored); unset means no token.
    pub token_file: Option<PathBuf>,
    /// Serve the mutating calls without a token on a TCP address beyond loopback (a firewall,
    /// a private network or a container's loopback-only port mapping keeps it private).
    pub allow_unauthenticated_remote: bool,
}

impl AuthSection {
    /// Refuses a gRPC listener beyond this machine that anyone reaching it could use to prove,
    /// cancel and evict, unless a token guards it or that was asked for.
    pub(super) fn validate(&self, listen: &ListenAddr) -> Result<(), (String, String)> {
        let ListenAddr::Tcp(addr) = listen else {
            return Ok(());
        };
        if addr.ip().is_loopback() || self.token_file.is_some() || self.allow_unauthenticated_remote
        {
            return Ok(());
        }
        Err((
            "daemon.listen".into(),
            format!(
                "{addr} takes calls from beyond this machine, and no [auth] token_file guards \
                 SubmitProof, Prove, CancelProof and EvictSRS there: anyone who reaches the port \
                 could use them. Listen on 127.0.0.1 (or a unix socket) where Curio runs on this \
                 machine; else set [auth] token_file, or, where a firewall or a private network \
                 keeps the port to Curio's machines (Curio sends no token), set [auth] \
                 allow_unauthenticated_remote = true"
            ),
        ))
    }
}

/// `[tls]`: TLS on a TCP gRPC listener; client certificates when `client_ca_file` is set.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct TlsSection {
    /// The server's certificate chain (PEM).
    pub cert_file: Option<PathBuf>,
    /// The server's private key (PEM).
    pub key_file: Option<PathBuf>,
    /// CA certificates (PEM) that client certificates must chain to; unset accepts any client.
    pub client_ca_file: Option<PathBuf>,
}

impl TlsSection {
    /// Whether TLS is configured.
    pub fn enabled(&self) -> bool {
        self.cert_file.is_some()
    }

    pub(super) fn validate(&self, unix_listener: bool) -> Result<(), (String, String)> {
        let invalid = |key: &str, msg: &str| Err((key.to_string(), msg.to_string()));
        match (&self.cert_file, &self.key_file) {
            (Some(_), None) => {
                return invalid(
                    "tls.key_file",
                    "is required with tls.cert_file: set both, or neither for plaintext",
                )
            }
            (None, Some(_)) => {
                return invalid(
                    "tls.cert_file",
                    "is required with tls.key_file: set both, or neither for plaintext",
                )
            }
            _ => {}
        }
        if self.client_ca_file.is_some() && !self.enabled() {
            return invalid(
                "tls.client_ca_file",
                "needs tls.cert_file and tls.key_file: client certificates are checked only over TLS",
            );
        }
        if self.enabled() && unix_listener {
            return invalid(
                "tls.cert_file",
                "TLS applies to a TCP listener, and [daemon] listen is a unix socket (guarded by socket_mode): unset the [tls] keys or listen on host:port",
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::sources::load;
    use super::super::{Overrides, DEFAULT_TOML};
    use super::*;

    #[test]
    fn a_listener_beyond_loopback_needs_a_token_or_an_explicit_yes() {
        let with = |env: &[(&str, &str)]| {
            let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
            load(None, env, &Overrides::default()).map(|_| ())
        };
        let refused = with(&[("SNARKD_DAEMON_LISTEN", "0.0.0.0:9820")]).unwrap_err();
        let said = refused.to_string();
        assert!(
            said.contains("daemon.listen")
                && said.contains("0.0.0.0:9820")
                && said.contains("[auth] token_file")
                && said.contains("allow_unauthenticated_remote = true"),
            "{said}"
        );
        let remote = ("SNARKD_DAEMON_LISTEN", "192.0.2.7:9820");
        assert!(with(&[remote]).is_err());
        assert!(with(&[remote, ("SNARKD_AUTH_TOKEN_FILE", "/etc/snarkd/token")]).is_ok());
        assert!(with(&[remote, ("SNARKD_AUTH_ALLOW_UNAUTHENTICATED_REMOTE", "true")]).is_ok());
        assert!(with(&[("SNARKD_DAEMON_LISTEN", "127.0.0.1:9820")]).is_ok());
        assert!(with(&[("SNARKD_DAEMON_LISTEN", "[::1]:9820")]).is_ok());
        assert!(with(&[("SNARKD_DAEMON_LISTEN", "unix:///run/snarkd/snarkd.sock")]).is_ok());
    }

    #[test]
    fn the_access_keys_are_documented_and_set_from_file_and_environment() {
        for key in [
            "allowed_hosts = ",
            "serve_all_rpcs = ",
            "scrapes_any_host = ",
            "token_file = ",
            "allow_unauthenticated_remote = ",
            "cert_file = ",
            "key_file = ",
            "client_ca_file = ",
        ] {
            assert!(
                DEFAULT_TOML.contains(key),
                "{key} missing from default.toml"
            );
        }
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(
            file.path(),
            "[auth]\ntoken_file = \"/etc/snarkd/token\"\n[tls]\ncert_file = \"c.pem\"\nkey_file = \"k.pem\"\n",
        )
        .unwrap();
        let env = [
            ("SNARKD_HTTP_ALLOWED_HOSTS", "[\"gpu-box\"]"),
            ("SNARKD_HTTP_SERVE_ALL_RPCS", "true"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let config = load(Some(file.path()), env, &Overrides::default()).unwrap();
        assert_eq!(config.http.allowed_hosts, ["gpu-box"]);
        assert!(config.http.serve_all_rpcs);
        assert_eq!(
            config.auth.token_file.as_deref(),
            Some(std::path::Path::new("/etc/snarkd/token"))
        );
        assert!(config.tls.enabled());

        let env = [("SNARKD_DAEMON_LISTEN", "unix:///run/s.sock")]
            .map(|(k, v)| (k.to_string(), v.to_string()));
        let err = load(Some(file.path()), env, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("tls.cert_file") && err.contains("unix socket"),
            "{err}"
        );
    }

    #[test]
    fn hosts_match_by_name_with_any_port() {
        let http = HttpSection::default();
        for host in [
            "localhost",
            "localhost:9821",
            "LOCALHOST:1",
            "127.0.0.1:9821",
            "[::1]",
            "[::1]:9821",
        ] {
            assert!(http.allows_host(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:9821",
            "localhost.evil.example",
            "127.0.0.1.nip.io:9821",
            "[::2]:9821",
            "",
        ] {
            assert!(!http.allows_host(host), "{host}");
        }
        let any = HttpSection {
            allowed_hosts: vec!["*".into()],
            ..HttpSection::default()
        };
        assert!(any.allows_host("evil.example:80"));
    }

    #[test]
    fn allowed_hosts_are_names_without_ports() {
        let http = HttpSection {
            allowed_hosts: vec!["gpu-box:9821".into()],
            ..HttpSection::default()
        };
        let (key, msg) = http.validate().unwrap_err();
        assert_eq!(key, "http.allowed_hosts");
        assert!(msg.contains("without a port"), "{msg}");
    }

    #[test]
    fn tls_needs_both_files_and_a_tcp_listener() {
        let cert = || Some(PathBuf::from("c.pem"));
        let only_cert = TlsSection {
            cert_file: cert(),
            ..TlsSection::default()
        };
        assert_eq!(only_cert.validate(false).unwrap_err().0, "tls.key_file");
        let ca_only = TlsSection {
            client_ca_file: cert(),
            ..TlsSection::default()
        };
        assert_eq!(ca_only.validate(false).unwrap_err().0, "tls.client_ca_file");
        let full = TlsSection {
            cert_file: cert(),
            key_file: cert(),
            client_ca_file: None,
        };
        assert!(full.validate(false).is_ok());
        let (key, msg) = full.validate(true).unwrap_err();
        assert!(
            key == "tls.cert_file" && msg.contains("unix socket"),
            "{msg}"
        );
        assert!(TlsSection::default().validate(true).is_ok());
    }
}
