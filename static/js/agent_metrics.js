// The per-agent metrics page's charts (D2), drawn with the vendored Chart.js from the page's JSON.
(function () {
  "use strict";
  const COLOURS = ["#2563eb", "#16a34a", "#d97706", "#dc2626", "#7c3aed", "#0891b2", "#db2777", "#65a30d", "#475569"];

  function draw() {
    const source = document.getElementById("agent-metrics-data");
    if (!source || typeof window.Chart === "undefined") return;
    const data = JSON.parse(source.textContent);
    const words = document.getElementById("agent-metrics-labels").dataset;
    const label = (agent) => data.agents[agent] || agent;
    const colour = (i) => COLOURS[i % COLOURS.length];
    const make = (id, config) => {
      const canvas = document.getElementById(id);
      if (canvas) new window.Chart(canvas, config);
    };
    const stacked = { x: { stacked: true }, y: { stacked: true, beginAtZero: true } };

    make("chart-calls", {
      type: "bar",
      data: {
        labels: data.day_labels,
        datasets: Object.entries(data.calls_by_day).map(([agent, counts], i) => ({
          label: label(agent), data: counts, backgroundColor: colour(i),
        })),
      },
      options: { scales: stacked, animation: false },
    });
    make("chart-success", {
      type: "line",
      data: {
        labels: data.day_labels,
        datasets: [{
          label: words.success, borderColor: colour(1), backgroundColor: colour(1), spanGaps: true,
          // A day alone (or at 100 %, on the chart's edge) is a dot that must show whole.
          pointRadius: 4, clip: false,
          data: data.success_by_day.map((v) => (v === null ? null : Math.round(v * 1000) / 10)),
        }],
      },
      options: {
        scales: { x: { offset: true }, y: { min: 0, max: 100 } },
        layout: { padding: { top: 6 } }, animation: false,
      },
    });
    make("chart-latency", {
      type: "bar",
      data: {
        labels: data.latency_buckets,
        datasets: Object.entries(data.latency_histogram).map(([agent, counts], i) => ({
          label: label(agent), data: counts, backgroundColor: colour(i),
        })),
      },
      options: { scales: stacked, animation: false },
    });
    make("chart-cost", {
      type: "line",
      data: { labels: data.day_labels, datasets: [{ label: words.cost, data: data.cost_by_day, borderColor: colour(2) }] },
      options: { scales: { y: { beginAtZero: true } }, animation: false },
    });
    for (const [id, mix, named] of [["chart-engines", data.engines, data.engine_labels], ["chart-models", data.models, {}]]) {
      const keys = Object.keys(mix);
      make(id, {
        type: "doughnut",
        data: {
          labels: keys.length ? keys.map((k) => named[k] || k) : [words.none],
          datasets: [{ data: keys.length ? keys.map((k) => mix[k]) : [1], backgroundColor: keys.length ? keys.map((_, i) => colour(i)) : ["#e5e7eb"] }],
        },
        options: { animation: false },
      });
    }
  }

  function customOnDates() {
    // Picking a date means a custom period: the select follows, so the dates are not ignored.
    const select = document.getElementById("metrics-period");
    for (const id of ["metrics-from", "metrics-to"]) {
      const input = document.getElementById(id);
      if (select && input) input.addEventListener("change", () => { select.value = "custom"; });
    }
  }

  function start() {
    customOnDates();
    draw();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
