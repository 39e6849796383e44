// Refreshes each element marked data-refresh with the fragment its URL names, without
// reloading the page, every data-every seconds; a failed look leaves the last one shown.
// Each look says it is the script's own (X-Jobs-Refresh, jobs.web.REFRESH_HEADER), not
// the person's, so that the app can keep it out of the session's activity.
for (const element of document.querySelectorAll("[data-refresh]")) {
  const every = Number(element.dataset.every || 5) * 1000;
  setInterval(async () => {
    try {
      const answer = await fetch(element.dataset.refresh, {
        credentials: "same-origin", headers: { "X-Jobs-Refresh": "1" },
      });
      if (answer.ok) element.innerHTML = await answer.text();
    } catch (error) {
      // the server is away for a moment: keep what is shown, and look again next time
    }
  }, every);
}
