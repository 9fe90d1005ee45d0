/*
 * Draws every <canvas class="chart" data-chart-source="ID"> from the JSON held by the
 * json_script element with that id:
 *
 *   {"type": "bar" | "line", "labels": [...],
 *    "datasets": [{"label": ..., "data": [...], "limit": true?}],
 *    "stacked": bool, "horizontal": bool, "unit": "%" | "",
 *    "bands": [{"from": "YYYY-MM-DD", "to": "YYYY-MM-DD"}]?}
 *
 * A dataset marked "limit" (or labelled "budget") is drawn as a dashed reference line;
 * "bands" (the node chart's quarantine periods) are shaded behind the datasets.
 * Outcomes are drawn in the page's tones: a dataset's "tone" and "shade", or a single
 * series' "tones" ([{tone, shade}] per label). "days" and "full_days" (per label) mark the
 * buckets that cover fewer days than a full one: lighter bars, hollow points, dashed lines.
 * Charts are drawn on page load and again after every htmx swap; Chart.getChart(canvas)
 * returns a canvas's chart.
 */
(function () {
  "use strict";

  const INK = "#1d2330";
  const GRID = "#e3e7ee";
  // Series that are no outcome (a node's measurements, say): colour-blind-safe hues.
  const FALLBACK = ["#2456c8", "#009e73", "#e69f00", "#cc79a7", "#56b4e9", "#d55e00", "#1d2330"];
  const TONES = ["fail", "warn", "ok", "neutral"];
  const PARTIAL_ALPHA = 0.4;

  // The outcome tones of static/css/board.css: "--tone-<tone>-shades" lists a tone's shades,
  // the first its own colour. A series or label marked {tone, shade} is drawn in one.
  function readPalette() {
    const style = getComputedStyle(document.documentElement);
    const palette = {};
    TONES.forEach(function (tone) {
      const shades = style.getPropertyValue("--tone-" + tone + "-shades").trim();
      palette[tone] = shades ? shades.split(/\s+/) : [INK];
    });
    return palette;
  }

  function paint(palette, tone, shade) {
    const shades = palette[tone] || palette.neutral;
    return shades[(shade || 0) % shades.length];
  }

  function lighter(color, alpha) {
    const hex = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(color);
    if (!hex) {
      return color;
    }
    const rgb = hex.slice(1).map(function (part) {
      return parseInt(part, 16);
    });
    return "rgba(" + rgb.join(", ") + ", " + alpha + ")";
  }

  // Whether the bucket at index i covers fewer days than a full one (the range's edges).
  function partialAt(spec, i) {
    return Boolean(spec.days) && spec.days[i] < spec.full_days;
  }

  function isLimit(dataset) {
    return dataset.limit === true || dataset.label === "budget";
  }

  function formatter(unit) {
    return function (value) {
      if (value === null || value === undefined) {
        return "";
      }
      const number = typeof value === "number" ? value : Number(value);
      const text = Number.isInteger(number) ? String(number) : number.toLocaleString("en", {
        maximumFractionDigits: 4,
      });
      return text + (unit || "");
    };
  }

  // Writes each bar's value at its end: distribution and single-series bar charts.
  const valueLabels = {
    id: "flakeboardValueLabels",
    afterDatasetsDraw(chart, args, options) {
      if (!options || !options.enabled) {
        return;
      }
      const ctx = chart.ctx;
      const horizontal = chart.options.indexAxis === "y";
      ctx.save();
      ctx.font = "12px system-ui, sans-serif";
      ctx.fillStyle = INK;
      chart.data.datasets.forEach(function (dataset, i) {
        const meta = chart.getDatasetMeta(i);
        if (meta.hidden) {
          return;
        }
        meta.data.forEach(function (bar, j) {
          const value = dataset.data[j];
          if (!value) {
            return;
          }
          const text = options.format(value);
          if (horizontal) {
            ctx.textAlign = "left";
            ctx.textBaseline = "middle";
            ctx.fillText(text, bar.x + 4, bar.y);
          } else {
            ctx.textAlign = "center";
            ctx.textBaseline = "bottom";
            ctx.fillText(text, bar.x, bar.y - 2);
          }
        });
      });
      ctx.restore();
    },
  };

  // Shades spans of days behind the datasets: a spec's "bands", each {"from": day, "to": day}
  // (ISO dates) on a chart whose labels are ISO dates, oldest first. A band's edges fall
  // between the points around them, in proportion to the days.
  const BAND = "rgba(217, 154, 0, 0.16)";
  const BAND_EDGE = "rgba(166, 94, 0, 0.55)";

  function dayOf(iso) {
    return Math.round(Date.parse(iso) / 86400000);
  }

  // The fractional index of a day among ``days`` (ascending, repeats allowed): a band's
  // start takes the first point of its day, its end the last; a day before every point is
  // -0.5, after every point last + 0.5 (both outside the chart area).
  function dayIndex(days, day, end) {
    const last = days.length - 1;
    if (!end) {
      const i = days.findIndex(function (d) { return d >= day; });
      if (i === -1) {
        return last + 0.5;
      }
      if (days[i] === day) {
        return i;
      }
      return i === 0 ? -0.5 : i - 1 + (day - days[i - 1]) / (days[i] - days[i - 1]);
    }
    let j = last;
    while (j >= 0 && days[j] > day) {
      j -= 1;
    }
    if (j === -1) {
      return -0.5;
    }
    if (days[j] === day) {
      return j;
    }
    return j === last ? last + 0.5 : j + (day - days[j]) / (days[j + 1] - days[j]);
  }

  const periodBands = {
    id: "flakeboardBands",
    beforeDatasetsDraw(chart, args, options) {
      const bands = (options && options.bands) || [];
      const labels = chart.data.labels || [];
      if (!bands.length || !labels.length) {
        return;
      }
      const days = labels.map(dayOf);
      const x = chart.scales.x;
      const area = chart.chartArea;
      const ctx = chart.ctx;
      ctx.save();
      bands.forEach(function (band) {
        const from = dayIndex(days, dayOf(band.from), false);
        const to = dayIndex(days, dayOf(band.to), true);
        if (to < from || from > days.length - 1 || to < 0) {
          return;
        }
        let left = Math.max(area.left, x.getPixelForValue(from));
        let right = Math.min(area.right, x.getPixelForValue(to));
        if (right - left < 3) {
          left -= 1.5;
          right = left + 3;
        }
        ctx.fillStyle = BAND;
        ctx.fillRect(left, area.top, right - left, area.bottom - area.top);
        ctx.fillStyle = BAND_EDGE;
        ctx.fillRect(left, area.top, right - left, 3);
      });
      ctx.restore();
    },
  };

  // Lines appear as a short line in the legend (dashed for a limit), bars as a square.
  function legendItems(chart) {
    const items = Chart.defaults.plugins.legend.labels.generateLabels(chart);
    items.forEach(function (item) {
      const dataset = chart.data.datasets[item.datasetIndex];
      const line = (dataset.type || chart.config.type) === "line";
      item.pointStyle = line ? "line" : "rect";
      // A series' own colour, not that of its first bar (lighter when its bucket is partial).
      if (typeof dataset.borderColor === "string") {
        item.fillStyle = dataset.borderColor;
      }
      item.strokeStyle = dataset.borderColor;
      item.lineWidth = line ? 3 : 0;
      item.lineDash = dataset.borderDash || [];
    });
    return items;
  }

  function datasetFor(spec, dataset, index, palette) {
    const single = spec.type === "bar" && spec.datasets.length === 1;
    let color;
    if (single && spec.tones) {
      color = spec.tones.map(function (tone) {
        return paint(palette, tone.tone, tone.shade);
      });
    } else if (dataset.tone) {
      color = paint(palette, dataset.tone, dataset.shade);
    } else {
      color = FALLBACK[index % FALLBACK.length];
    }
    const many = spec.labels.length > 45;
    const out = {
      label: dataset.label,
      data: dataset.data,
      backgroundColor: color,
      borderColor: color,
    };
    const partial = function (i) {
      return partialAt(spec, i);
    };
    if (spec.type === "line") {
      out.borderWidth = 2;
      out.pointRadius = many ? 0 : 2;
      out.pointHoverRadius = 4;
      out.tension = 0;
      out.fill = false;
      if (spec.days) {
        // A partial bucket's point is hollow and the line into or out of it dashed.
        out.pointRadius = spec.labels.map(function (label, i) {
          return partial(i) ? 3 : out.pointRadius;
        });
        out.pointBackgroundColor = spec.labels.map(function (label, i) {
          return partial(i) ? "#fff" : color;
        });
        out.segment = {
          borderDash: function (ctx) {
            return partial(ctx.p0DataIndex) || partial(ctx.p1DataIndex) ? [5, 4] : undefined;
          },
        };
      }
    } else {
      out.borderWidth = 0;
      out.maxBarThickness = 42;
      if (spec.days && typeof color === "string") {
        // A partial bucket's bar is lighter, outlined in its full colour.
        out.backgroundColor = spec.labels.map(function (label, i) {
          return partial(i) ? lighter(color, PARTIAL_ALPHA) : color;
        });
        out.borderWidth = spec.labels.map(function (label, i) {
          return partial(i) ? 1.5 : 0;
        });
      }
    }
    if (isLimit(dataset)) {
      const limit = paint(palette, "fail", 0);
      out.type = "line";
      out.borderColor = limit;
      out.backgroundColor = limit;
      out.borderDash = [6, 4];
      out.borderWidth = 2;
      out.pointRadius = 0;
      out.pointBackgroundColor = limit;
      out.segment = undefined;
      out.stack = "limit";
      out.order = -1;
    }
    return out;
  }

  function configFor(spec, palette) {
    palette = palette || readPalette();
    const unit = spec.unit || "";
    const format = formatter(unit);
    const horizontal = Boolean(spec.horizontal);
    const stacked = Boolean(spec.stacked);
    const valueAxis = horizontal ? "x" : "y";
    const indexAxis = horizontal ? "y" : "x";
    const single = spec.datasets.length === 1;
    const counts = spec.datasets.every(function (dataset) {
      return dataset.data.every(function (value) {
        return value === null || Number.isInteger(value);
      });
    });
    const labelBars = spec.type === "bar" && single && spec.labels.length <= 40;
    const scales = {};
    scales[valueAxis] = {
      beginAtZero: true,
      stacked: stacked,
      grace: labelBars ? "12%" : 0,
      grid: { color: GRID },
      ticks: { callback: format, precision: counts ? 0 : undefined },
    };
    scales[indexAxis] = {
      stacked: stacked,
      grid: { display: horizontal ? false : spec.type === "line", color: GRID },
      ticks: { autoSkip: true, maxTicksLimit: horizontal ? 40 : 12, maxRotation: 0 },
    };
    return {
      type: spec.type,
      data: {
        labels: spec.labels,
        datasets: spec.datasets.map(function (dataset, i) {
          return datasetFor(spec, dataset, i, palette);
        }),
      },
      options: {
        indexAxis: indexAxis,
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        interaction: { mode: "index", intersect: false, axis: indexAxis },
        scales: scales,
        plugins: {
          legend: {
            display: !single,
            position: "bottom",
            labels: { boxWidth: 12, boxHeight: 12, usePointStyle: true, pointStyleWidth: 22,
                      generateLabels: legendItems },
          },
          tooltip: {
            callbacks: {
              title: function (items) {
                if (!items.length) {
                  return "";
                }
                const i = items[0].dataIndex;
                const label = spec.labels[i];
                return partialAt(spec, i)
                  ? label + " (" + spec.days[i] + " of " + spec.full_days + " days)"
                  : label;
              },
              label: function (item) {
                return item.dataset.label + ": " + format(item.raw);
              },
            },
          },
          flakeboardValueLabels: { enabled: labelBars, format: format },
          flakeboardBands: { bands: spec.bands || [] },
        },
      },
      plugins: [valueLabels, periodBands],
    };
  }

  function draw(canvas) {
    if (typeof Chart === "undefined" || Chart.getChart(canvas)) {
      return;
    }
    const source = document.getElementById(canvas.dataset.chartSource);
    if (!source) {
      return;
    }
    new Chart(canvas, configFor(JSON.parse(source.textContent)));
  }

  function forgetDetached() {
    if (typeof Chart === "undefined") {
      return;
    }
    Object.values(Chart.instances).forEach(function (chart) {
      if (!chart.canvas || !chart.canvas.isConnected) {
        chart.destroy();
      }
    });
  }

  function drawAll(root) {
    forgetDetached();
    (root || document).querySelectorAll("canvas.chart[data-chart-source]").forEach(draw);
  }

  if (typeof Chart !== "undefined") {
    Chart.defaults.color = INK;
    Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
  }
  window.FlakeboardCharts = { drawAll: drawAll, configFor: configFor };

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () {
      drawAll(document);
    });
  } else {
    drawAll(document);
  }
  document.addEventListener("htmx:afterSettle", function () {
    drawAll(document);
  });
})();
