//! The bearer token of `[auth] token_file`: a tower layer in front of the gRPC routes that
//! answers UNAUTHENTICATED to a mutating call (Submit, Prove, Cancel, Preload, Evict) without
//! `authorization: Bearer <token>`. Read-only calls pass without one.

use std::path::Path;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::{ready, Either, Ready};
use http::{header, HeaderMap, Request, Response, StatusCode};
use snarkd_proto::v1::proving_engine_server::ProvingEngineServer;
use subtle::ConstantTimeEq;
use tonic::server::NamedService;
use tonic::Status;
use tower::{Layer, Service};

use crate::api::ProvingService;
use crate::config::ConfigError;
use crate::http::refusal::refuse;

/// The ProvingEngine service's name, as in its call paths.
pub(super) const PROVING: &str = <ProvingEngineServer<ProvingService> as NamedService>::NAME;
/// ProvingEngine calls that change what the daemon does: they need the token when one is set.
const MUTATING: [&str; 5] = [
    "SubmitProof",
    "Prove",
    "CancelProof",
    "PreloadSRS",
    "EvictSRS",
];

/// Whether `path` (`/package.Service/Method`) is a mutating ProvingEngine call.
pub fn is_mutating(path: &str) -> bool {
    path.strip_prefix('/')
        .and_then(|p| p.split_once('/'))
        .is_some_and(|(service, method)| service == PROVING && MUTATING.contains(&method))
}

/// The token mutating calls must carry.
#[derive(Clone)]
pub struct Token(Arc<[u8]>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// Reads the token from `path`; surrounding whitespace (a final newline) is not part of it.
    pub fn load(path: &Path) -> anyhow::Result<Token> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ConfigError::refused(
                "auth.token_file",
                format!(
                    "cannot read the token file {}: {e}; check the path and that snarkd's user may read it",
                    path.display()
                ),
            )
        })?;
        let token = text.trim();
        if token.is_empty() {
            return Err(ConfigError::refused(
                "auth.token_file",
                format!(
                    "the token file {} is empty: write a long random token into it, e.g. `openssl rand -hex 32`",
                    path.display()
                ),
            )
            .into());
        }
        Ok(Token(token.as_bytes().into()))
    }

    /// Whether `headers` carry `authorization: Bearer <token>`, compared in constant time.
    fn presented_in(&self, headers: &HeaderMap) -> bool {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return false;
        };
        let value = value.as_bytes();
        let scheme = b"bearer ";
        if value.len() < scheme.len() || !value[..scheme.len()].eq_ignore_ascii_case(scheme) {
            return false;
        }
        value[scheme.len()..].trim_ascii().ct_eq(&self.0).into()
    }
}

/// Requires the token on mutating calls; `None` lets every call through.
#[derive(Clone)]
pub struct TokenLayer(pub Option<Token>);

impl<S> Layer<S> for TokenLayer {
    type Service = RequireToken<S>;

    fn layer(&self, inner: S) -> RequireToken<S> {
        RequireToken {
            inner,
            token: self.0.clone(),
        }
    }
}

#[derive(Clone)]
pub struct RequireToken<S> {
    inner: S,
    token: Option<Token>,
}

impl<S, B> Service<Request<B>> for RequireToken<S>
where
    S: Service<Request<B>, Response = Response<tonic::body::Body>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Either<Ready<Result<S::Response, S::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        if let Some(token) = &self.token {
            if is_mutating(request.uri().path()) && !token.presented_in(request.headers()) {
                let status = Status::unauthenticated(
                    "this call needs the daemon's token: send the metadata `authorization: Bearer <token>` with the token from the daemon's [auth] token_file",
                );
                let response = refuse(request.headers(), StatusCode::UNAUTHORIZED, status);
                return Either::Left(ready(Ok(response.map(tonic::body::Body::new))));
            }
        }
        Either::Right(self.inner.call(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutating_calls_are_named_by_their_full_path() {
        for path in [
            "/cuzk.v1.ProvingEngine/SubmitProof",
            "/cuzk.v1.ProvingEngine/Prove",
            "/cuzk.v1.ProvingEngine/CancelProof",
            "/cuzk.v1.ProvingEngine/PreloadSRS",
            "/cuzk.v1.ProvingEngine/EvictSRS",
        ] {
            assert!(is_mutating(path), "{path}");
        }
        for path in [
            "/cuzk.v1.ProvingEngine/GetStatus",
            "/cuzk.v1.ProvingEngine/AwaitProof",
            "/cuzk.v1.ProvingEngine/StreamStatus",
            "/grpc.health.v1.Health/Check",
            "/other.Service/Prove",
            "Prove",
        ] {
            assert!(!is_mutating(path), "{path}");
        }
    }

    #[test]
    fn only_the_exact_bearer_token_is_accepted() {
        let token = Token(b"s3cret".as_slice().into());
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, value.parse().unwrap());
            token.presented_in(&headers)
        };
        assert!(with("Bearer s3cret"));
        assert!(with("bearer s3cret"));
        for wrong in [
            "Bearer s3cre",
            "Bearer s3cret2",
            "Basic s3cret",
            "s3cret",
            "Bearer ",
        ] {
            assert!(!with(wrong), "{wrong}");
        }
        assert!(!token.presented_in(&HeaderMap::new()));
    }

    #[test]
    fn an_empty_token_file_is_refused() {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), "\n").unwrap();
        let err = Token::load(file.path()).unwrap_err().to_string();
        assert!(err.contains("empty") && err.contains("token_file"), "{err}");
        std::fs::write(file.path(), "abc\n").unwrap();
        assert_eq!(&*Token::load(file.path()).unwrap().0, b"abc");
    }
}
