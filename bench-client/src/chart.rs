//! SVG charts for the bench's self-contained HTML pages (`report.html`, `plan.html`): linear
//! axes from zero, paths, a legend; no script, no stylesheet or font from elsewhere.

use std::fmt::Write;

/// Colours of the lines of a chart, in order.
pub const SIDE_COLOURS: [&str; 4] = ["#2563eb", "#ea580c", "#16a34a", "#9333ea"];
pub const WIDTH: f64 = 720.0;
pub const LEFT: f64 = 84.0;
pub const RIGHT: f64 = 16.0;
pub const TOP: f64 = 28.0;
pub const BOTTOM: f64 = 40.0;

/// An SVG chart under construction: a plot area with linear axes from zero.
pub struct Chart {
    pub svg: String,
    height: f64,
    plot_height: f64,
    x_max: f64,
    y_max: f64,
    legend: Vec<String>,
    pub colours: Vec<&'static str>,
}

impl Chart {
    /// A chart of `sort` for `subject`, whose plot is `plot_height` high, with its x and y axes
    /// from zero to their maximum (a zero y maximum draws no y axis).
    pub fn new(
        sort: &str,
        subject: &str,
        plot_height: f64,
        (x_max, x_label): (f64, &str),
        (y_max, y_label): (f64, &str),
    ) -> Chart {
        let height = TOP + plot_height + BOTTOM;
        let mut c = Chart {
            svg: format!(
                "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" data-chart=\"{sort}\" \
                 data-kind=\"{}\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} \
                 {height}\" role=\"img\"><title>{}: {sort}</title>",
                esc(subject),
                esc(subject),
            ),
            height,
            plot_height,
            x_max: nice_max(x_max),
            y_max: if y_max > 0.0 { nice_max(y_max) } else { 0.0 },
            legend: Vec::new(),
            colours: SIDE_COLOURS.to_vec(),
        };
        c.axes(x_label, y_label);
        c
    }

    pub fn x(&self, v: f64) -> f64 {
        LEFT + v / self.x_max * (WIDTH - LEFT - RIGHT)
    }

    pub fn y(&self, v: f64) -> f64 {
        TOP + self.plot_height - v / self.y_max * self.plot_height
    }

    fn axes(&mut self, x_label: &str, y_label: &str) {
        let (bottom, right) = (TOP + self.plot_height, WIDTH - RIGHT);
        let _ = write!(
            self.svg,
            "<path d=\"M{LEFT} {TOP} V{bottom} H{right}\" fill=\"none\" stroke=\"#444\"/>"
        );
        for t in ticks(self.x_max) {
            let x = self.x(t);
            let _ = write!(
                self.svg,
                "<path d=\"M{x:.1} {bottom} v4\" stroke=\"#444\"/><text x=\"{x:.1}\" y=\"{:.1}\" \
                 text-anchor=\"middle\">{}</text>",
                bottom + 16.0,
                label(t)
            );
        }
        let _ = write!(
            self.svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            (LEFT + right) / 2.0,
            self.height - 6.0,
            esc(x_label)
        );
        if self.y_max > 0.0 {
            for t in ticks(self.y_max) {
                let y = self.y(t);
                let _ = write!(
                    self.svg,
                    "<path d=\"M{LEFT} {y:.1} h-4\" stroke=\"#444\"/><path d=\"M{LEFT} {y:.1} \
                     H{right}\" stroke=\"#eee\"/><text x=\"{:.1}\" y=\"{:.1}\" \
                     text-anchor=\"end\">{}</text>",
                    LEFT - 6.0,
                    y + 4.0,
                    label(t)
                );
            }
            let _ = write!(
                self.svg,
                "<text transform=\"translate(14 {:.1}) rotate(-90)\" \
                 text-anchor=\"middle\">{}</text>",
                TOP + self.plot_height / 2.0,
                esc(y_label)
            );
        }
    }

    pub fn path(&mut self, d: &str, colour: &str, what: &str) {
        let _ = write!(
            self.svg,
            "<path d=\"{d}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\">\
             <title>{}</title></path>",
            esc(what)
        );
    }

    pub fn legend(&mut self, names: impl Iterator<Item = String>) {
        self.legend = names.collect();
    }

    pub fn finish(mut self) -> String {
        let mut x = LEFT;
        for (name, colour) in self.legend.iter().zip(self.colours.iter().cycle()) {
            let _ = write!(
                self.svg,
                "<rect x=\"{x:.1}\" y=\"8\" width=\"10\" height=\"10\" fill=\"{colour}\"/>\
                 <text x=\"{:.1}\" y=\"17\">{}</text>",
                x + 14.0,
                esc(name)
            );
            x += 24.0 + name.len() as f64 * 6.0;
        }
        self.svg.push_str("</svg>\n");
        self.svg
    }
}

/// `max` rounded up to 1, 2 or 5 times a power of ten (at least 1).
pub fn nice_max(max: f64) -> f64 {
    let max = max.max(1.0);
    let p = 10f64.powf(max.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|v| *v >= max)
        .unwrap_or(10.0 * p)
}

/// Five ticks from 0 to `max` (a `nice_max`).
pub fn ticks(max: f64) -> impl Iterator<Item = f64> {
    (0..=5).map(move |i| max * i as f64 / 5.0)
}

pub fn label(v: f64) -> String {
    if v.fract().abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Text as HTML and SVG content or attribute value.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_end_on_round_numbers() {
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(7.0), 10.0);
        assert_eq!(nice_max(130.0), 200.0);
        assert_eq!(nice_max(4100.0), 5000.0);
        assert_eq!(ticks(5000.0).collect::<Vec<_>>()[1], 1000.0);
    }
}
