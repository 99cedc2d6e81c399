//! The browser's clock and an async sleep on `setTimeout`.

use wasm_bindgen::JsCast;

/// Milliseconds since the Unix epoch on the browser's clock.
pub fn now_ms() -> u64 {
    js_sys::Date::now() as u64
}

/// Resolves after `ms` milliseconds.
pub async fn sleep_ms(ms: u64) {
    let promise = js_sys::Promise::new(&mut |resolve, _reject| {
        let callback: &js_sys::Function = resolve.unchecked_ref();
        let _ = web_sys::window()
            .expect("the monitor runs in a window")
            .set_timeout_with_callback_and_timeout_and_arguments_0(
                callback,
                i32::try_from(ms).unwrap_or(i32::MAX),
            );
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}
