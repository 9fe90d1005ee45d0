/*
 * Draws every <canvas class="chart" data-chart-source="ID"> from the JSON held by the
 * json_script element with that id:
 *
 *   {"type": "bar" | "line", "labels": [...],
 *    "datasets": [{"label": ..., "data": [...], "limit": true?}],
 *    "stacked": bool, "horizontal": bool, "unit": "%" | ""}
 *
 * A dataset marked "limit" (or labelled "budget") is drawn as a dashed reference line.
 * Charts are drawn on page load and again after every htmx swap; Chart.getChart(canvas)
 * returns a canvas's chart.
 */
(function () {
  "use strict";

  const INK = "#1d2330";
  const GRID = "#e3e7ee";
  const LIMIT = "#b3261e";
  // One colour per reason code, the same on every chart: fixture trouble in oranges,
  // flakes in blues, property checks in red and pink, ledger upkeep in purple.
  const COLORS = {
    clean: "#1c7a3d",
    within_budget: "#1c7a3d",
    fixture_drifted: "#e69f00",
    fixture_missing: "#a65e00",
    frozen_node: "#0072b2",
    over_budget: "#1f4e9c",
    quarantined: "#56b4e9",
    quarantine_cap_exceeded: "#00304f",
    property_fail: "#c0392b",
    property_not_run: "#cc79a7",
    too_few_runs: "#8a8f98",
    quarantine_expired: "#7b3fa0",
    tier_violation: "#6d214f",
    no_evidence: "#4d4d4d",
    expired: LIMIT,
  };
  const FALLBACK = ["#2456c8", "#009e73", "#e69f00", "#cc79a7", "#56b4e9", "#d55e00"];

  function colorOf(label, index) {
    return COLORS[label] || FALLBACK[index % FALLBACK.length];
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

  // Lines appear as a short line in the legend (dashed for a limit), bars as a square.
  function legendItems(chart) {
    const items = Chart.defaults.plugins.legend.labels.generateLabels(chart);
    items.forEach(function (item) {
      const dataset = chart.data.datasets[item.datasetIndex];
      const line = (dataset.type || chart.config.type) === "line";
      item.pointStyle = line ? "line" : "rect";
      item.strokeStyle = dataset.borderColor;
      item.lineWidth = line ? 3 : 0;
      item.lineDash = dataset.borderDash || [];
    });
    return items;
  }

  function datasetFor(spec, dataset, index) {
    const single = spec.type === "bar" && spec.datasets.length === 1;
    const color = single
      ? spec.labels.map(function (label) {
          return COLORS[label] || colorOf(dataset.label, index);
        })
      : colorOf(dataset.label, index);
    const many = spec.labels.length > 45;
    const out = {
      label: dataset.label,
      data: dataset.data,
      backgroundColor: color,
      borderColor: color,
    };
    if (spec.type === "line") {
      out.borderWidth = 2;
      out.pointRadius = many ? 0 : 2;
      out.pointHoverRadius = 4;
      out.tension = 0;
      out.fill = false;
    } else {
      out.borderWidth = 0;
      out.maxBarThickness = 42;
    }
    if (isLimit(dataset)) {
      out.type = "line";
      out.borderColor = LIMIT;
      out.backgroundColor = LIMIT;
      out.borderDash = [6, 4];
      out.borderWidth = 2;
      out.pointRadius = 0;
      out.stack = "limit";
      out.order = -1;
    }
    return out;
  }

  function configFor(spec) {
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
          return datasetFor(spec, dataset, i);
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
              label: function (item) {
                return item.dataset.label + ": " + format(item.raw);
              },
            },
          },
          flakeboardValueLabels: { enabled: labelBars, format: format },
        },
      },
      plugins: [valueLabels],
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
