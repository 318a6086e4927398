/* gamed web pages: the board renderers shared by every page, and the four page controllers.
 *
 * Plain browser JavaScript, no build step, no libraries. Every value that comes from the server
 * (player names above all: they are untrusted) reaches the DOM through textContent or
 * setAttribute, never through innerHTML.
 *
 * Each page's <body data-page="..."> picks its controller: "index", "game", "replay", "ratings".
 *
 * Stable hooks (tests and user style sheets may rely on these; keep them when changing the pages):
 *
 *   every page     #status                     connection / loading status text (role=status)
 *                  #error                      an error message, hidden when there is none
 *   index.html     #games tr[data-id]          one live table; data-game, data-turn; cells
 *                                              .game, .players, .turn, .spectators; a[href] to
 *                                              game.html?id=<id>
 *                  #matches tr[data-id]        one finished match; data-game; a[href] to
 *                                              replay.html?id=<id>
 *                  #leaderboards a[data-game]  one leaderboard link per game type
 *   game.html      #board[data-game]           the board (renderers below); data-turn
 *                  #turn                       the turn number (text)
 *                  #to-move                    who moves next (text)
 *                  #players li[data-seat]      the players
 *                  #moves li[data-n]           one per move, oldest first; data-seat
 *                  #clocks li[data-seat]       seconds left per seat (data-seconds)
 *                  #result                     hidden until the game ends; data-reason, then
 *                                              a[href] to replay.html?id=<match id> when stored
 *   replay.html    #step                       "k / N" (k moves applied); data-step, data-total
 *                  #first #back #forward #last buttons; ArrowLeft/ArrowRight/Home/End keys
 *                  #slider                     input[type=range] 0..N
 *                  #moves li[data-n]           one per move; a button in each jumps to it;
 *                                              the current one has aria-current="step"
 *                  #board, #players, #result   as on game.html
 *   ratings.html   #ratings tr[data-name]      one per rated player, best first; data-rank,
 *                                              data-rating; cells .rank .name .rating .games
 *                                              .wins .draws .losses
 *
 * Board renderers (GamedBoard.render(container, game, state)):
 *   kalaha         .pit[data-seat][data-index] (index 0..5 in the seat's sowing order, text =
 *                  stones), .store[data-seat] (text = stones); .to-move on the mover's row
 *   fight          .cell[data-x][data-y] (.wall for walls), .warrior[data-team][data-id]
 *                  [data-facing][data-alive] inside its cell, svg .shot[data-team][data-id]
 *                  for the last turn's shots
 *   combat/        .cell[data-x][data-y], .lake, .unit[data-owner][data-unit] (data-unit is
 *   stratego       "" and the class .hidden for a unit spectators cannot see), .last on the
 *                  squares of the last move
 *   connect4       .cell[data-x][data-y] (y = 0 at the bottom), .disc[data-seat], .win on the
 *                  cells of the winning line
 *   other games    pre.raw-state with the state as JSON
 */
"use strict";

(function () {
  var GAMES = ["kalaha", "fight", "combat", "stratego", "connect4"];
  var GAME_NAMES = {
    kalaha: "Kalaha", fight: "Virtual Fight", combat: "Combat", stratego: "Stratego",
    connect4: "Connect Four"
  };
  var ARROWS = { UP: "\u25B2", DOWN: "\u25BC", LEFT: "\u25C0", RIGHT: "\u25B6" };
  var KALAHA_SIDES = ["A", "B"];

  /* ---------- small DOM helpers ---------- */

  function el(tag, attrs, children) {
    var ns = attrs && attrs._ns;
    var node = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (k === "_ns" || v === null || v === undefined || v === false) return;
        if (k === "text") node.textContent = String(v);
        else if (k === "class") node.setAttribute("class", v);
        else node.setAttribute(k, v === true ? "" : String(v));
      });
    }
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function $(id) { return document.getElementById(id); }

  function gameName(game) { return GAME_NAMES[game] || String(game); }

  function seatLabel(game, seat) {
    if (seat === null || seat === undefined) return "";
    if (game === "kalaha") return KALAHA_SIDES[seat] || String(seat);
    if (game === "fight") return "team " + seat;
    // Connect Four's protocol numbers its players 0 and 1 (player 0 moves first).
    if (game === "connect4") return "player " + seat + (seat === 0 ? " (X)" : seat === 1 ? " (O)" : "");
    return "seat " + (seat + 1);
  }

  function playerName(players, seat) {
    for (var i = 0; i < (players || []).length; i++) {
      if (players[i].seat === seat) return players[i].name;
    }
    return seatLabel(null, seat) || "?";
  }

  function setStatus(text) {
    var s = $("status");
    if (s) s.textContent = text;
  }

  function showError(text) {
    var e = $("error");
    if (!e) return;
    e.textContent = text || "";
    e.hidden = !text;
  }

  function param(name) {
    return new URLSearchParams(window.location.search).get(name);
  }

  function formatTime(unix) {
    if (typeof unix !== "number") return "";
    var d = new Date(unix * 1000);
    return d.toLocaleString();
  }

  function formatClock(seconds) {
    if (seconds === null || seconds === undefined) return "\u2013";
    var s = Math.max(0, seconds);
    var m = Math.floor(s / 60);
    var r = s - m * 60;
    return m + ":" + (r < 10 ? "0" : "") + r.toFixed(1);
  }

  function fetchJSON(url) {
    return fetch(url, { headers: { Accept: "application/json" } }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (body) {
        if (!r.ok) throw new Error(body.error || ("HTTP " + r.status));
        return body;
      });
    });
  }

  function gameLink(game) {
    return el("a", { href: "ratings.html?game=" + encodeURIComponent(game), "data-game": game,
                     text: gameName(game) });
  }

  /* ---------- board renderers ---------- */

  function renderKalaha(box, state) {
    var pits = state.pits || [[], []];
    var stores = state.stores || [0, 0];
    function pit(seat, index) {
      var n = pits[seat][index];
      return el("div", {
        class: "pit seat-" + seat, "data-seat": seat, "data-index": index, role: "img",
        "aria-label": KALAHA_SIDES[seat] + (index + 1) + ": " + n + " stones",
        title: KALAHA_SIDES[seat] + (index + 1), text: n
      });
    }
    function store(seat) {
      return el("div", {
        class: "store seat-" + seat, "data-seat": seat, role: "img",
        "aria-label": "store " + KALAHA_SIDES[seat] + "7: " + stores[seat] + " stones",
        title: KALAHA_SIDES[seat] + "7 (store)", text: stores[seat]
      });
    }
    function labels(seat, order) {
      return el("div", { class: "pit-labels", "aria-hidden": "true" }, order.map(function (i) {
        return el("span", { text: KALAHA_SIDES[seat] + (i + 1) });
      }));
    }
    var bIdx = [], aIdx = [];
    for (var i = pits[1].length - 1; i >= 0; i--) bIdx.push(i);
    for (var j = 0; j < pits[0].length; j++) aIdx.push(j);
    var rowB = el("div", { class: "pit-row seat-1" + (state.to_move === 1 ? " to-move" : "") },
                  bIdx.map(function (k) { return pit(1, k); }));
    var rowA = el("div", { class: "pit-row seat-0" + (state.to_move === 0 ? " to-move" : "") },
                  aIdx.map(function (k) { return pit(0, k); }));
    box.appendChild(el("div", { class: "kalaha" }, [
      store(1),
      el("div", { class: "pits" }, [labels(1, bIdx), rowB, rowA, labels(0, aIdx)]),
      store(0)
    ]));
  }

  function svg(tag, attrs) {
    attrs = attrs || {};
    attrs._ns = "http://www.w3.org/2000/svg";
    return el(tag, attrs);
  }

  function renderFight(box, state) {
    var w = state.width, h = state.height, walls = state.walls || [];
    var grid = el("div", { class: "grid fight", style: "--cols:" + w + ";--rows:" + h,
                           role: "grid", "aria-label": "Virtual Fight map " + w + " by " + h });
    var cells = {};
    for (var y = 0; y < h; y++) {
      var row = el("div", { class: "grid-row", role: "row" });
      for (var x = 0; x < w; x++) {
        var wall = (walls[y] || "").charAt(x) === "#";
        var cell = el("div", { class: "cell" + (wall ? " wall" : ""), "data-x": x, "data-y": y,
                               role: "gridcell", "aria-label": wall ? "wall" : null });
        cells[x + "," + y] = cell;
        row.appendChild(cell);
      }
      grid.appendChild(row);
    }
    (state.warriors || []).forEach(function (wr) {
      var cell = cells[wr.x + "," + wr.y];
      if (!cell) return;
      var alive = wr.alive !== false;
      cell.appendChild(el("span", {
        class: "warrior team-" + wr.team + (alive ? "" : " dead"),
        "data-team": wr.team, "data-id": wr.id, "data-facing": wr.facing, "data-alive": alive,
        role: "img", title: "team " + wr.team + " warrior " + wr.id,
        "aria-label": "team " + wr.team + " warrior " + wr.id + (alive ? ", facing " +
                      String(wr.facing).toLowerCase() : ", dead")
      }, [alive ? (ARROWS[wr.facing] || "?") : "\u2715",
          el("sub", { text: wr.team, "aria-hidden": "true" })]));
    });
    var shots = state.shots || [];
    if (shots.length) {
      var over = svg("svg", { class: "shots", viewBox: "0 0 " + w + " " + h,
                              preserveAspectRatio: "none", "aria-hidden": "true" });
      shots.forEach(function (s) {
        over.appendChild(svg("line", {
          class: "shot team-" + s.team, "data-team": s.team, "data-id": s.id,
          x1: s.from[0] + 0.5, y1: s.from[1] + 0.5, x2: s.to[0] + 0.5, y2: s.to[1] + 0.5
        }));
      });
      grid.appendChild(over);
    }
    box.appendChild(grid);
    if (shots.length) {
      box.appendChild(el("p", { class: "shot-list" }, [
        "Shots last turn: " + shots.map(function (s) {
          return "team " + s.team + " warrior " + s.id + " (" + s.from[0] + "," + s.from[1] +
                 ") \u2192 (" + s.to[0] + "," + s.to[1] + ")";
        }).join("; ")
      ]));
    }
  }

  function unitAbbrev(unit) {
    if (!unit) return "?";
    var known = { marshal: "10", general: "9", colonel: "8", major: "7", captain: "6",
                  lieutenant: "5", sergeant: "4", miner: "3", scout: "2", spy: "S", bomb: "B",
                  flag: "F" };
    var k = String(unit).toLowerCase();
    return known[k] || String(unit).slice(0, 2).toUpperCase();
  }

  function renderStratego(box, state) {
    var w = state.width, h = state.height, rows = state.cells || [];
    var last = {};
    (state.last || []).forEach(function (p) { if (p) last[p[0] + "," + p[1]] = true; });
    var grid = el("div", { class: "grid stratego", style: "--cols:" + w + ";--rows:" + h,
                           role: "grid", "aria-label": "board " + w + " by " + h });
    for (var y = 0; y < h; y++) {
      var row = el("div", { class: "grid-row", role: "row" });
      for (var x = 0; x < w; x++) {
        var c = (rows[y] || [])[x];
        var cls = "cell" + (c === "lake" ? " lake" : "") + (last[x + "," + y] ? " last" : "");
        var cell = el("div", { class: cls, "data-x": x, "data-y": y, role: "gridcell",
                               "aria-label": c === "lake" ? "lake" : null });
        if (c && c !== "lake") {
          var hidden = c.unit === null || c.unit === undefined;
          cell.appendChild(el("span", {
            class: "unit seat-" + c.owner + (hidden ? " hidden" : ""), "data-owner": c.owner,
            "data-unit": hidden ? "" : c.unit, role: "img", title: hidden ? "hidden" : c.unit,
            "aria-label": "seat " + (c.owner + 1) + " " + (hidden ? "hidden unit" : c.unit),
            text: hidden ? "?" : unitAbbrev(c.unit)
          }));
        }
        row.appendChild(cell);
      }
      grid.appendChild(row);
    }
    box.appendChild(grid);
  }

  function renderConnect4(box, state) {
    var w = state.width, h = state.height, cols = state.cells || [];
    var win = {};
    if (state.win_line) {
      var a = state.win_line[0], b = state.win_line[1];
      var dx = Math.sign(b[0] - a[0]), dy = Math.sign(b[1] - a[1]);
      var steps = Math.max(Math.abs(b[0] - a[0]), Math.abs(b[1] - a[1]));
      for (var k = 0; k <= steps; k++) win[(a[0] + k * dx) + "," + (a[1] + k * dy)] = true;
    }
    var grid = el("div", { class: "grid connect4", style: "--cols:" + w + ";--rows:" + h,
                           role: "grid", "aria-label": "Connect Four " + w + " columns" });
    for (var y = h - 1; y >= 0; y--) {
      var row = el("div", { class: "grid-row", role: "row" });
      for (var x = 0; x < w; x++) {
        var s = (cols[x] || [])[y];
        var cell = el("div", { class: "cell" + (win[x + "," + y] ? " win" : ""), "data-x": x,
                               "data-y": y, role: "gridcell" });
        if (s !== null && s !== undefined) {
          cell.appendChild(el("span", {
            class: "disc seat-" + s, "data-seat": s, role: "img",
            "aria-label": "player " + s + (win[x + "," + y] ? ", winning line" : ""),
            text: s === 0 ? "X" : s === 1 ? "O" : String(s + 1)
          }));
        }
        row.appendChild(cell);
      }
      grid.appendChild(row);
    }
    box.appendChild(grid);
    box.appendChild(el("div", { class: "col-labels", "aria-hidden": "true",
                                style: "--cols:" + w },
      // Columns count from 0, as in the protocol and the move list.
      Array.apply(null, Array(w)).map(function (_, i) { return el("span", { text: i }); })));
  }

  var RENDERERS = {
    kalaha: renderKalaha, fight: renderFight, combat: renderStratego,
    stratego: renderStratego, connect4: renderConnect4
  };

  function render(box, game, state) {
    clear(box);
    box.setAttribute("data-game", game);
    if (!state) {
      box.appendChild(el("p", { class: "empty", text: "No position to show." }));
      return;
    }
    var fn = RENDERERS[game];
    try {
      if (fn) { fn(box, state); return; }
    } catch (e) {
      clear(box);
    }
    box.appendChild(el("pre", { class: "raw-state", text: JSON.stringify(state, null, 1) }));
  }

  /* ---------- shared pieces of the pages ---------- */

  function renderPlayers(list, game, players, toMove) {
    clear(list);
    (players || []).forEach(function (p) {
      var moving = toMove !== null && toMove !== undefined && p.seat === toMove;
      list.appendChild(el("li", {
        "data-seat": p.seat, class: "seat-" + p.seat + (moving ? " to-move" : "")
      }, [
        el("span", { class: "swatch seat-" + p.seat, "aria-hidden": "true" }),
        el("span", { class: "seat", text: seatLabel(game, p.seat) + ": " }),
        el("span", { class: "name", text: p.name }),
        moving ? el("span", { class: "badge", text: " (to move)" }) : null
      ]));
    });
  }

  function moveItem(game, players, m, asButton) {
    var who = (m.seat === null || m.seat === undefined) ? "" : playerName(players, m.seat) + ": ";
    var text = String(m.move);
    // Simultaneous turns (Virtual Fight) may already name their turn: "turn 3: ...".
    var label = (/^turn\b/i.test(text) ? "" : (game === "fight" ? "turn " + m.n + ": " : m.n + ". ")) +
                who + text;
    var li = el("li", { "data-n": m.n, "data-seat": m.seat === null ? null : m.seat,
                        class: m.seat === null || m.seat === undefined ? "" : "seat-" + m.seat });
    if (asButton) li.appendChild(el("button", { type: "button", "data-n": m.n, text: label }));
    else li.appendChild(el("span", { text: label }));
    if (typeof m.t === "number") {
      li.appendChild(el("span", { class: "t", text: " " + m.t.toFixed(1) + " s" }));
    }
    return li;
  }

  function resultText(game, players, result) {
    if (!result) return "";
    var scores = result.scores || [];
    var best = Math.max.apply(null, scores.length ? scores : [0]);
    var winners = [];
    scores.forEach(function (s, i) { if (s === best) winners.push(playerName(players, i)); });
    var text;
    if (scores.length && winners.length === 1 && scores.some(function (s) { return s < best; })) {
      text = winners[0] + " won";
    } else if (scores.length && scores.every(function (s) { return s === best; })) {
      text = "Draw";
    } else {
      text = "Game over";
    }
    var parts = scores.map(function (s, i) { return playerName(players, i) + " " + s; });
    return text + (result.reason ? " (" + result.reason + ")" : "") +
           (parts.length ? " \u2014 " + parts.join(", ") : "");
  }

  function showResult(game, players, result, matchId) {
    var box = $("result");
    if (!box) return;
    clear(box);
    if (!result) { box.hidden = true; return; }
    box.setAttribute("data-reason", result.reason || "");
    box.appendChild(el("strong", { text: resultText(game, players, result) }));
    if (matchId !== null && matchId !== undefined) {
      box.appendChild(document.createTextNode(" "));
      box.appendChild(el("a", { href: "replay.html?id=" + encodeURIComponent(matchId),
                                "data-match": matchId, text: "Replay this match" }));
    }
    box.hidden = false;
  }

  /* ---------- index.html ---------- */

  function pageIndex() {
    var lb = $("leaderboards");
    GAMES.forEach(function (g) { lb.appendChild(el("li", {}, [gameLink(g)])); });

    function games(list) {
      var body = $("games").querySelector("tbody");
      clear(body);
      if (!list.length) {
        body.appendChild(el("tr", { class: "empty" }, [
          el("td", { colspan: 5, text: "No games are being played right now." })]));
      }
      list.forEach(function (g) {
        var names = el("span", { class: "players" });
        (g.players || []).forEach(function (p, i) {
          if (i) names.appendChild(document.createTextNode(" vs "));
          var moving = g.to_move !== null && g.to_move !== undefined && p.seat === g.to_move;
          names.appendChild(el("span", { class: "player seat-" + p.seat + (moving ? " to-move" : ""),
                                         "data-seat": p.seat, text: p.name + (moving ? " \u25C2" : ""),
                                         title: moving ? "to move" : null }));
        });
        body.appendChild(el("tr", { "data-id": g.id, "data-game": g.game, "data-turn": g.turn }, [
          el("td", { class: "game", "data-label": "Game" }, [gameName(g.game)]),
          el("td", { class: "players", "data-label": "Players" }, [names]),
          el("td", { class: "turn", "data-label": "Turn", text: g.turn }),
          el("td", { class: "spectators", "data-label": "Watching", text: g.spectators }),
          el("td", { class: "watch" }, [el("a", { href: "game.html?id=" + encodeURIComponent(g.id),
                                                  text: "Watch", "aria-label": "Watch " + g.id })])
        ]));
      });
    }

    function matches(list) {
      var body = $("matches").querySelector("tbody");
      clear(body);
      if (!list.length) {
        body.appendChild(el("tr", { class: "empty" }, [
          el("td", { colspan: 5, text: "No finished matches yet." })]));
      }
      list.forEach(function (m) {
        var players = (m.seats || []).map(function (s) { return { seat: s.seat, name: s.name }; });
        body.appendChild(el("tr", { "data-id": m.id, "data-game": m.game }, [
          el("td", { class: "game", "data-label": "Game" }, [gameName(m.game)]),
          el("td", { class: "players", "data-label": "Players",
                     text: players.map(function (p) { return p.name; }).join(" vs ") }),
          el("td", { class: "result", "data-label": "Result",
                     text: resultText(m.game, players, { scores: m.scores, reason: m.reason }) }),
          el("td", { class: "ended", "data-label": "Ended", text: formatTime(m.ended) }),
          el("td", { class: "watch" }, [el("a", { href: "replay.html?id=" + encodeURIComponent(m.id),
                                                  text: "Replay",
                                                  "aria-label": "Replay match " + m.id })])
        ]));
      });
    }

    var es = new EventSource("api/events");
    es.addEventListener("games", function (e) {
      games(JSON.parse(e.data).games || []);
      setStatus("Live");
    });
    es.addEventListener("matches", function (e) {
      matches(JSON.parse(e.data).matches || []);
    });
    es.onopen = function () { setStatus("Live"); };
    es.onerror = function () { setStatus("Reconnecting\u2026"); };
  }

  /* ---------- game.html ---------- */

  function pageGame() {
    var id = param("id");
    var board = $("board");
    var moves = $("moves");
    var table = null;
    var clocks = {};
    var clockAt = 0;
    var toMove = null;
    var ended = false;

    if (!id) { showError("No game given (game.html?id=...)."); return; }
    $("title").textContent = "Game " + id;
    document.title = "Game " + id + " \u2014 gamed";

    function drawClocks() {
      var list = $("clocks");
      clear(list);
      var elapsed = ended ? 0 : (Date.now() - clockAt) / 1000;
      if (!Object.keys(clocks).length) {
        list.appendChild(el("li", { class: "none", text: "No clocks in this game." }));
      }
      Object.keys(clocks).sort().forEach(function (k) {
        var v = clocks[k];
        var seat = Number(k);
        if (v !== null && v !== undefined && seat === toMove) v = v - elapsed;
        list.appendChild(el("li", { "data-seat": seat, "data-seconds": v === null ? null : v,
                                    class: "seat-" + seat + (seat === toMove ? " to-move" : "") }, [
          el("span", { class: "name", text: playerName(table.players, seat) + ": " }),
          el("span", { class: "clock", text: formatClock(v) })
        ]));
      });
    }

    function setTurn(turn, mover) {
      toMove = mover === undefined ? null : mover;
      $("turn").textContent = turn;
      board.setAttribute("data-turn", turn);
      $("to-move").textContent = ended ? "game over" :
        toMove === null ? (table.game === "fight" ? "all teams" : "\u2013") :
        playerName(table.players, toMove) + " (" + seatLabel(table.game, toMove) + ")";
      renderPlayers($("players"), table.game, table.players, ended ? null : toMove);
    }

    function snapshot(t) {
      table = t;
      ended = false;
      $("game-name").textContent = gameName(t.game);
      $("game-name").setAttribute("href", "ratings.html?game=" + encodeURIComponent(t.game));
      render(board, t.game, t.state);
      clear(moves);
      (t.moves || []).forEach(function (m) { moves.appendChild(moveItem(t.game, t.players, m)); });
      clocks = t.clocks || {};
      clockAt = Date.now();
      setTurn(t.turn, t.to_move);
      drawClocks();
      showResult(t.game, t.players, t.result, null);
      if (t.result) ended = true;
    }

    function moved(m) {
      render(board, table.game, m.state);
      var li = moveItem(table.game, table.players, m);
      moves.appendChild(li);
      if (moves.parentNode) moves.parentNode.scrollTop = moves.parentNode.scrollHeight;
      if (m.clocks) { clocks = m.clocks; }
      clockAt = Date.now();
      setTurn(m.turn, m.to_move);
      drawClocks();
    }

    var es = new EventSource("api/games/" + encodeURIComponent(id) + "/events");
    es.addEventListener("snapshot", function (e) {
      snapshot(JSON.parse(e.data));
      showError("");
      setStatus("Live");
    });
    es.addEventListener("move", function (e) { if (table) moved(JSON.parse(e.data)); });
    es.addEventListener("end", function (e) {
      var d = JSON.parse(e.data);
      es.close();
      ended = true;
      if (table) {
        if (d.state) render(board, table.game, d.state);
        setTurn($("turn").textContent, null);
        drawClocks();
        showResult(table.game, table.players, d.result, d.match_id);
      }
      setStatus("Game over");
    });
    es.onerror = function () {
      if (ended) return;
      // A game that is unknown (or already gone) answers 404: say so instead of retrying forever.
      fetchJSON("api/games/" + encodeURIComponent(id)).then(function () {
        setStatus("Reconnecting\u2026");
      }, function (err) {
        es.close();
        setStatus("Not live");
        showError("This game is not being played: " + err.message + ".");
      });
    };
    window.setInterval(function () { if (table && !ended) drawClocks(); }, 500);
  }

  /* ---------- replay.html ---------- */

  function pageReplay() {
    var id = param("id");
    if (!id) { showError("No match given (replay.html?id=...)."); return; }
    $("title").textContent = "Match " + id;
    document.title = "Match " + id + " \u2014 gamed";
    var board = $("board"), slider = $("slider"), list = $("moves");
    var match = null, players = [], states = [], step = 0;

    function go(k) {
      if (!match) return;
      step = Math.max(0, Math.min(states.length - 1, k));
      render(board, match.game, states[step]);
      board.setAttribute("data-step", step);
      var total = states.length - 1;
      var s = $("step");
      s.textContent = step + " / " + total;
      s.setAttribute("data-step", step);
      s.setAttribute("data-total", total);
      slider.value = step;
      slider.setAttribute("aria-valuetext", "move " + step + " of " + total);
      $("first").disabled = $("back").disabled = step === 0;
      $("forward").disabled = $("last").disabled = step === total;
      var current = step ? match.moves[step - 1] : null;
      $("current-move").textContent = current ?
        (current.seat === null || current.seat === undefined ? "" :
         playerName(players, current.seat) + ": ") + current.move : "Start position";
      Array.prototype.forEach.call(list.children, function (li) {
        if (Number(li.getAttribute("data-n")) === step) {
          li.setAttribute("aria-current", "step");
          if (li.scrollIntoView) li.scrollIntoView({ block: "nearest" });
        } else {
          li.removeAttribute("aria-current");
        }
      });
      showResult(match.game, players, step === total ?
                 { scores: match.scores, reason: match.reason } : null, null);
      if (window.history && window.history.replaceState) {
        window.history.replaceState(null, "", "?id=" + encodeURIComponent(id) + "&step=" + step);
      }
    }

    $("first").addEventListener("click", function () { go(0); });
    $("back").addEventListener("click", function () { go(step - 1); });
    $("forward").addEventListener("click", function () { go(step + 1); });
    $("last").addEventListener("click", function () { go(states.length - 1); });
    slider.addEventListener("input", function () { go(Number(slider.value)); });
    list.addEventListener("click", function (e) {
      var b = e.target.closest("button[data-n]");
      if (b) go(Number(b.getAttribute("data-n")));
    });
    document.addEventListener("keydown", function (e) {
      if (e.target && e.target.tagName === "INPUT") return;  // the slider handles its own keys
      var to = { ArrowLeft: step - 1, ArrowRight: step + 1, Home: 0, End: states.length - 1 }[e.key];
      if (to !== undefined) { e.preventDefault(); go(to); }
    });

    setStatus("Loading\u2026");
    fetchJSON("api/matches/" + encodeURIComponent(id)).then(function (m) {
      match = m;
      players = (m.seats || []).map(function (s) { return { seat: s.seat, name: s.name }; });
      states = [m.initial_state].concat((m.moves || []).map(function (mv) { return mv.state; }));
      // A move without a state (not recorded) shows the last known position.
      for (var i = 1; i < states.length; i++) if (!states[i]) states[i] = states[i - 1];
      // The end shows what the game revealed when it was over (e.g. every Stratego unit).
      var last = m.extra && m.extra.final_state;
      if (last) states[states.length - 1] = last;
      $("game-name").textContent = gameName(m.game);
      $("game-name").setAttribute("href", "ratings.html?game=" + encodeURIComponent(m.game));
      $("played").textContent = formatTime(m.started) + (m.rated === false ? " (unrated)" : "");
      renderPlayers($("players"), m.game, players, null);
      clear(list);
      (m.moves || []).forEach(function (mv) { list.appendChild(moveItem(m.game, players, mv, true)); });
      slider.max = states.length - 1;
      slider.disabled = false;
      setStatus("");
      var wanted = Number(param("step"));
      go(Number.isFinite(wanted) && param("step") !== null ? wanted : 0);
    }, function (err) {
      setStatus("");
      showError("Cannot load match " + id + ": " + err.message + ".");
    });
  }

  /* ---------- ratings.html ---------- */

  function pageRatings() {
    var game = param("game") || "kalaha";
    var nav = $("games-nav");
    GAMES.forEach(function (g) {
      var a = gameLink(g);
      if (g === game) a.setAttribute("aria-current", "page");
      nav.appendChild(el("li", {}, [a]));
    });
    $("title").textContent = gameName(game) + " leaderboard";
    document.title = gameName(game) + " leaderboard \u2014 gamed";
    var body = $("ratings").querySelector("tbody");
    setStatus("Loading\u2026");
    fetchJSON("api/ratings/" + encodeURIComponent(game)).then(function (d) {
      setStatus("");
      clear(body);
      var rows = d.ratings || [];
      if (!rows.length) {
        body.appendChild(el("tr", { class: "empty" }, [
          el("td", { colspan: 7, text: "Nobody is rated in this game yet." })]));
      }
      rows.forEach(function (r, i) {
        body.appendChild(el("tr", { "data-name": r.name, "data-rank": i + 1,
                                    "data-rating": r.rating }, [
          el("td", { class: "rank", "data-label": "Rank", text: i + 1 }),
          el("td", { class: "name", "data-label": "Player", text: r.name }),
          el("td", { class: "rating", "data-label": "Rating", text: Math.round(r.rating) }),
          el("td", { class: "games", "data-label": "Games", text: r.games }),
          el("td", { class: "wins", "data-label": "Won", text: r.wins }),
          el("td", { class: "draws", "data-label": "Drawn", text: r.draws }),
          el("td", { class: "losses", "data-label": "Lost", text: r.losses })
        ]));
      });
    }, function (err) {
      setStatus("");
      showError("Cannot load the leaderboard: " + err.message + ".");
    });
  }

  window.GamedBoard = { render: render, gameName: gameName, renderers: RENDERERS };

  var PAGES = { index: pageIndex, game: pageGame, replay: pageReplay, ratings: pageRatings };
  function start() {
    var page = PAGES[document.body.getAttribute("data-page")];
    if (page) page();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
