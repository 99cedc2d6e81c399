//! TLS on the TCP gRPC listener (`[tls]`), with certificates made here by rcgen, checked with
//! grpcurl: it works with the CA, plaintext and unknown CAs are refused, and with
//! `client_ca_file` only clients with a certificate get in.

mod common;

use std::path::{Path, PathBuf};

use common::{grpcurl, start_daemon, test_config, StandInProver};
use snarkd::config::ListenAddr;

/// A test CA that issues certificates.
struct Pki {
    ca: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

impl Pki {
    fn new() -> Pki {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "snarkd test CA");
        let ca = rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap())
            .unwrap();
        Pki { ca }
    }

    /// Writes `<name>.crt` and `<name>.key` for a certificate this CA signs.
    fn issue(
        &self,
        dir: &Path,
        name: &str,
        sans: &[&str],
        usage: rcgen::ExtendedKeyUsagePurpose,
    ) -> (PathBuf, PathBuf) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params =
            rcgen::CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap();
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &self.ca).unwrap();
        let (cert_path, key_path) = (
            dir.join(format!("{name}.crt")),
            dir.join(format!("{name}.key")),
        );
        std::fs::write(&cert_path, cert.pem()).unwrap();
        std::fs::write(&key_path, key.serialize_pem()).unwrap();
        (cert_path, key_path)
    }

    fn write_ca(&self, dir: &Path) -> PathBuf {
        let path = dir.join("ca.crt");
        std::fs::write(&path, self.ca.pem()).unwrap();
        path
    }
}

/// A daemon whose gRPC listener speaks TLS with a certificate of `pki` (and asks clients for one
/// when `client_ca`); returns it with its address and the CA file.
async fn tls_daemon(dir: &Path, pki: &Pki, client_ca: bool) -> (snarkd::Daemon, String, PathBuf) {
    let ca = pki.write_ca(dir);
    let (cert, key) = pki.issue(
        dir,
        "server",
        &["localhost", "127.0.0.1"],
        rcgen::ExtendedKeyUsagePurpose::ServerAuth,
    );
    let mut config = test_config();
    config.tls.cert_file = Some(cert);
    config.tls.key_file = Some(key);
    config.tls.client_ca_file = client_ca.then(|| ca.clone());
    let daemon = start_daemon(&config, StandInProver::new()).await;
    let addr = grpc_port(&daemon);
    (daemon, addr, ca)
}

fn grpc_port(daemon: &snarkd::Daemon) -> String {
    let ListenAddr::Tcp(addr) = daemon.grpc_addr() else {
        panic!("TLS listens on TCP")
    };
    addr.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_listener_works_with_grpcurl_and_refuses_plaintext() {
    let dir = tempfile::tempdir().unwrap();
    let (_daemon, addr, ca) = tls_daemon(dir.path(), &Pki::new(), false).await;
    let ca = ca.to_str().unwrap();

    let services = grpcurl::run(&["-cacert", ca, &addr, "list"]).await;
    assert!(
        services.lines().any(|l| l == "cuzk.v1.ProvingEngine"),
        "{services}"
    );
    let status = grpcurl::run(&[
        "-cacert",
        ca,
        "-d",
        "{}",
        &addr,
        "cuzk.v1.ProvingEngine/GetStatus",
    ])
    .await;
    assert!(status.contains("stand-in cpu"), "{status}");

    let (ok, out, err) = grpcurl::output(&["-plaintext", &addr, "list"]).await;
    assert!(!ok, "plaintext must be refused: {out}{err}");
    // Without the CA the server's certificate is not trusted.
    let (ok, out, err) = grpcurl::output(&[&addr, "list"]).await;
    assert!(!ok, "an unknown CA must be refused: {out}{err}");
    assert!(err.contains("certificate"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_client_ca_only_clients_with_a_certificate_get_in() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new();
    let (_daemon, addr, ca) = tls_daemon(dir.path(), &pki, true).await;
    let (client_cert, client_key) = pki.issue(
        dir.path(),
        "client",
        &["curio"],
        rcgen::ExtendedKeyUsagePurpose::ClientAuth,
    );
    let ca = ca.to_str().unwrap();

    let services = grpcurl::run(&[
        "-cacert",
        ca,
        "-cert",
        client_cert.to_str().unwrap(),
        "-key",
        client_key.to_str().unwrap(),
        &addr,
        "list",
    ])
    .await;
    assert!(services.contains("cuzk.v1.ProvingEngine"), "{services}");
    let (ok, out, err) = grpcurl::output(&["-cacert", ca, &addr, "list"]).await;
    assert!(
        !ok,
        "a client without a certificate must be refused: {out}{err}"
    );
}
