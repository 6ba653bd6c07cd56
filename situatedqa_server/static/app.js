// Progressive enhancement only: every page works without JavaScript.
document.addEventListener("DOMContentLoaded", () => {
  // Confirm destructive buttons (deleting a submission gives no quota back).
  for (const button of document.querySelectorAll("button.danger")) {
    button.addEventListener("click", (event) => {
      if (!window.confirm("Delete this submission? Its test quota is not given back.")) {
        event.preventDefault();
      }
    });
  }
  // Submit filter forms when a select changes.
  for (const select of document.querySelectorAll("form.filters select")) {
    select.addEventListener("change", () => select.form.submit());
  }
});

// The upload page: the blank-file link and the highlighted quota row follow the chosen
// track and split (without JavaScript the link shows the form's current choice).
document.addEventListener("DOMContentLoaded", () => {
  const link = document.getElementById("blank-link");
  const track = document.getElementById("track");
  const split = document.getElementById("split");
  if (!link || !track || !split) {
    return;
  }
  const update = () => {
    link.href = link.dataset.pattern.replace("TRACK", track.value).replace("SPLIT", split.value);
    document.getElementById("blank-name").textContent = `${track.value} / ${split.value}`;
    for (const row of document.querySelectorAll("table.quota tr[data-track]")) {
      row.classList.toggle("chosen", row.dataset.track === track.value);
    }
  };
  track.addEventListener("change", update);
  split.addEventListener("change", update);
});

// The compare page: once A is chosen, B offers only submissions on A's board.
document.addEventListener("DOMContentLoaded", () => {
  const a = document.getElementById("pick-a");
  const b = document.getElementById("pick-b");
  if (!a || !b) {
    return;
  }
  const narrow = () => {
    const board = a.selectedOptions[0] ? a.selectedOptions[0].dataset.board : undefined;
    for (const option of b.querySelectorAll("option[data-board]")) {
      option.hidden = Boolean(board) && option.dataset.board !== board;
      option.disabled = option.hidden || option.value === a.value;
    }
    if (b.selectedOptions[0] && b.selectedOptions[0].disabled) {
      b.value = "";
    }
  };
  a.addEventListener("change", narrow);
  narrow();
});

// The leaderboard's column picker: ticking a lenient column (not in the paper) reloads the
// board with it at once; without JavaScript the Filter button does the same. Hidden columns
// are not rendered at all, so a board page stays as light as the paper's columns make it.
document.addEventListener("DOMContentLoaded", () => {
  const boxes = document.querySelectorAll(".column-picker input[name=show]");
  const reload = () => {
    const url = new URL(window.location.href);
    url.searchParams.delete("show");
    for (const box of boxes) {
      if (box.checked) {
        url.searchParams.append("show", box.value);
      }
    }
    window.location.assign(url);
  };
  for (const box of boxes) {
    box.addEventListener("change", reload);
  }
});

// Tables wider than the window scroll inside themselves: say so under each (the board, the
// home page's tracks), or their right-hand columns are easy to miss.
document.addEventListener("DOMContentLoaded", () => {
  for (const hint of document.querySelectorAll(".scroll-hint")) {
    const scroller = hint.previousElementSibling;
    if (!scroller) {
      continue;
    }
    const update = () => {
      hint.hidden = scroller.scrollWidth <= scroller.clientWidth + 1;
    };
    window.addEventListener("resize", update);
    update();
  }
});
