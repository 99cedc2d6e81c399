//! Which daemons the page watches: the one that served it, or every `daemon=URL` in the query
//! (`?daemon=http://localhost:9821&daemon=http://localhost:9822`), shown side by side.

/// The daemons' base URLs for a page at `origin` + `pathname` with query `search` (as
/// `window.location` gives them). Without `daemon=` the page watches the daemon that served it,
/// at the page's own directory, so a reverse proxy's path prefix is kept.
pub fn daemon_urls(search: &str, origin: &str, pathname: &str) -> Vec<String> {
    let mut urls: Vec<String> = Vec::new();
    for pair in search.trim_start_matches('?').split('&') {
        let Some(value) = pair.strip_prefix("daemon=") else {
            continue;
        };
        let url = normalize(&percent_decode(value));
        if !url.is_empty() && !urls.contains(&url) {
            urls.push(url);
        }
    }
    if urls.is_empty() {
        urls.push(page_base(origin, pathname));
    }
    urls
}

/// The page's directory: `origin` plus `pathname` without its last segment or trailing slash.
pub fn page_base(origin: &str, pathname: &str) -> String {
    let dir = pathname.rfind('/').map_or("", |i| &pathname[..i]);
    format!("{}{}", origin.trim_end_matches('/'), dir)
}

/// A daemon URL with a scheme (http when none is given) and no trailing slash.
fn normalize(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    if url.is_empty() || url.contains("://") {
        url.to_string()
    } else {
        format!("http://{url}")
    }
}

/// Query-string decoding: `%XX` escapes and `+` for a space; a malformed escape stays as is.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                {
                    Some(byte) => {
                        out.push(byte);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_daemon_parameters_the_page_watches_its_own_daemon() {
        assert_eq!(
            daemon_urls("", "http://127.0.0.1:9821", "/"),
            ["http://127.0.0.1:9821"]
        );
        assert_eq!(
            daemon_urls("?other=1", "http://localhost:19821", "/index.html"),
            ["http://localhost:19821"]
        );
        assert_eq!(
            daemon_urls("", "https://ops.example", "/snarkd/index.html"),
            ["https://ops.example/snarkd"]
        );
    }

    #[test]
    fn every_daemon_parameter_is_watched_once_in_order() {
        let urls = daemon_urls(
            "?daemon=http%3A%2F%2Flocalhost%3A9821%2F&x=1&daemon=localhost:9822&daemon=http://localhost:9821",
            "http://localhost:9821",
            "/",
        );
        assert_eq!(urls, ["http://localhost:9821", "http://localhost:9822"]);
    }

    #[test]
    fn malformed_escapes_are_kept_literally() {
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("a%zz"), "a%zz");
        assert_eq!(percent_decode("a%41+b"), "aA b");
    }
}
