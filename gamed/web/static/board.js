/* gamed web pages: the board renderers shared by every page, and the five page controllers.
 *
 * Plain browser JavaScript, no build step, no libraries. Every value that comes from the server
 * (player names above all: they are untrusted) reaches the DOM through textContent or
 * setAttribute, never through innerHTML. The site's Content-Security-Policy allows this file and
 * style.css only: no inline script, no style attributes (el() sets styles through the CSSOM).
 *
 * Each page's <body data-page="..."> picks its controller: "index", "game", "replay", "ratings",
 * "player". Before it starts, the page reads the daemon's games from /api/server ("games": their
 * order, titles and board kinds); window.GamedBoard exists once it has.
 *
 * What people see follows the project's conventions: seats by their 0-based wire number with the
 * player's name ("seat 0 (A) alice"), Stratego/Combat units by their classic rank (1 = marshal ...
 * 9 = scout, S spy, B bomb, F flag) with a legend, squares of Stratego/Combat as column letter and
 * row number (A0 top left, as gamed-combat), Virtual Fight squares as row,col (as its POS answer),
 * results in words from the server ("alice won 40–32"), Stratego's seat 0 drawn red.
 *
 * Stable hooks (tests and user style sheets may rely on these; keep them when changing the pages):
 *
 *   every page     #status                     connection / loading status text (role=status)
 *                  #error                      an error message, hidden when there is none
 *                  a.player-link[data-name]    a player's name, linking to player.html?name=<name>
 *   index.html     #games tr[data-id]          one live table; data-game, data-turn; cells
 *                                              .game, .players, .turn, .spectators; a[href] to
 *                                              game.html?id=<id>
 *                  #matches tr[data-id]        one finished match; data-game; cells .game,
 *                                              .players, .result (the result in words), .ended;
 *                                              a[href] to replay.html?id=<id>
 *                  #leaderboards a[data-game]  one leaderboard link per game type
 *                  #how-to li[data-serves]     one per listening port (data-serves = the option,
 *                                              data-address); .address, code.command (what to type)
 *   game.html      #board[data-game]           the board (renderers below); data-turn
 *                  #turn                       the turn number (text)
 *                  #to-move                    who moves next (text); hidden (with the words
 *                                              around it) once the game is over
 *                  #over                       shown once the game is over: the result in words
 *                  #players li[data-seat]      the players: .seat ("seat 0 (A)"), .name
 *                  #moves li[data-n]           one per move, oldest first; data-seat
 *                  #clocks li[data-seat]       seconds left per seat (data-seconds)
 *                  #result                     hidden until the game ends; data-reason, then
 *                                              a[href] to replay.html?id=<match id> when stored
 *   play.html      #join                       the form: #name, #token (empty: a guest), #game,
 *                                              #opponent (engine:<level> | person:), #table, #play
 *                  #board[data-game]           the player's view; data-turn, data-to-act; the
 *                                              pits / columns to play have class "legal" and
 *                                              data-action (click or Enter plays them)
 *                  #actions button[data-index] one per legal action (data-action, the text)
 *                  #board (Stratego)           a unit that can move has class "legal source"
 *                                              (data-x, data-y); clicked, it is "selected" and
 *                                              its destinations get "legal target" with the
 *                                              move in data-action
 *                  #typed                      shown when the actions listed are not all there
 *                                              are (a setup): #typed-action, #grammar
 *                  #seats li[data-seat]        the players; #clock the time for this move;
 *                  #state-text                 the board as text; #resign; #result (data-reason)
 *   replay.html    #step                       "k / N" (k moves applied); data-step, data-total
 *                  #first #back #forward #last buttons; ArrowLeft/ArrowRight/Home/End keys
 *                  #slider                     input[type=range] 0..N
 *                  #moves li[data-n]           one per move; a button in each jumps to it;
 *                                              the current one has aria-current="step"; a
 *                                              move with a clock has span.clock[data-seat]
 *                                              per seat (data-used, data-left seconds; text
 *                                              "used 1.23 s, left 0:58.8")
 *                  #board, #players, #result   as on game.html
 *                  #players li span.rating-change  a rated seat's "1500 ± 980 → 1540 ± 900"
 *                                              (before → after, the 95 % interval); data-before,
 *                                              data-after (mu)
 *   ratings.html   #ratings tr[data-name]      one per rated player, best first (by the
 *                                              conservative rating); data-rank, data-rating
 *                                              (mu), data-sigma, data-conservative,
 *                                              data-provisional ("true"/"false"); cells .rank
 *                                              .name .rating .games .wins .draws .losses; the
 *                                              .rating text is "1620 ± 85" (the 95 % interval),
 *                                              then abbr.provisional "?" while provisional
 *   player.html    #player-games tr[data-id]   the player's live games; a[href] to game.html
 *                  #player-ratings tr[data-game]  one per game type the player is rated in;
 *                                              data-* and .rating as on ratings.html; cells
 *                                              .game .rating .rank .games .wins .draws .losses
 *                  #player-matches tr[data-id] the player's recent matches, newest first; cells
 *                                              .game, .seat, .opponents, .result, .ended
 *   tournaments.html  #tournaments tr[data-name]  one per tournament, newest first; cells .name
 *                                              (a[href] to tournament.html?name=<name>), .game,
 *                                              .format, .state, .games ("played/scheduled")
 *   tournament.html   #progress, #progress-text  games played of all (or of those scheduled)
 *                  #standings tr[data-bot]     cells .rank .bot .points .games .wins .draws
 *                                              .losses .rating ("1620 ± 85", "?" unknown) .faults
 *                  #crosstable tr[data-bot] td[data-against]  "points/games" against that bot
 *                  #match-section              two bots: #match-line (W/D/L, pairs, Elo, LOS,
 *                                              LLR) and svg#llr-curve: polyline.llr[data-pairs],
 *                                              line.bound.upper, line.bound.lower
 *                  #tournament-games tr[data-number]  cells .number .pair .opening .seats
 *                                              .result; a[href] to replay.html?id=<match id>
 *
 * Board renderers (GamedBoard.render(container, game, state)), by the game's board kind (its
 * "board" in /api/server; Combat's is stratego):
 *   kalaha         .pit[data-seat][data-index] (index 0..5 in the seat's sowing order, text =
 *                  stones), .store[data-seat] (text = stones); .to-move on the mover's row
 *   fight          .cell[data-x][data-y] (.wall for walls), .warrior[data-team][data-id]
 *                  [data-facing][data-alive] inside its cell, svg .shot[data-team][data-id]
 *                  for the last turn's shots, p.shot-list (squares as row,col)
 *   combat/        .cell[data-x][data-y], .lake, .unit[data-owner][data-unit] (data-unit is
 *   stratego       "" and the class .hidden for a unit spectators cannot see; text = the classic
 *                  rank), .last on the squares of the last move; .col-label / .row-label
 *                  coordinates; p.legend
 *   connect4       .cell[data-x][data-y] (y = 0 at the bottom), .disc[data-seat], .win on the
 *                  cells of the winning line
 *   other games    pre.raw-state with the state as JSON
 */
"use strict";

(function () {
  // The game types in the order the pages list them, their names for people and how their states
  // are drawn (a key of RENDERERS): the daemon's game registry, from /api/server ("games"), read
  // before a page starts.
  var GAMES = [];
  var GAME_NAMES = {};
  var BOARDS = {};
  var ARROWS = { UP: "\u25B2", DOWN: "\u25BC", LEFT: "\u25C0", RIGHT: "\u25B6" };
  var KALAHA_SIDES = ["A", "B"];
  // The game's own name for a seat, beside its number: Kalaha's sides, Connect Four's stones,
  // Stratego's colours.
  var SIDES = { kalaha: KALAHA_SIDES, connect4: ["X", "O"], stratego: ["red", "blue"] };
  // Classic ranks (the UCC and classic European convention, as gamed-combat draws them).
  var RANKS = {
    marshal: "1", general: "2", colonel: "3", major: "4", captain: "5", lieutenant: "6",
    sergeant: "7", miner: "8", scout: "9", spy: "S", bomb: "B", flag: "F"
  };
  var UCC_UNITS = {
    "1": "marshal", "2": "general", "3": "colonel", "4": "major", "5": "captain",
    "6": "lieutenant", "7": "sergeant", "8": "miner", "9": "scout", s: "spy", S: "spy",
    B: "bomb", F: "flag"
  };
  var LEGEND = "Units: 1 marshal, 2 general, 3 colonel, 4 major, 5 captain, 6 lieutenant, " +
               "7 sergeant, 8 miner, 9 scout, S spy, B bomb, F flag; ? a unit not shown yet. " +
               "Squares: column letter and row number (A0 is the top left).";
  var LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";

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
        // The pages' Content-Security-Policy (style-src 'self') blocks style attributes; styles
        // set through the CSSOM are allowed: "--cols:7;--rows:6" becomes two custom properties.
        else if (k === "style") String(v).split(";").forEach(function (d) {
          var i = d.indexOf(":");
          if (i > 0) node.style.setProperty(d.slice(0, i).trim(), d.slice(i + 1).trim());
        });
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

  /* "seat 0 (A)", "seat 1 (blue)", "team 2": the wire's 0-based number, with the game's own
     name for the side where it has one. */
  function seatLabel(game, seat) {
    if (seat === null || seat === undefined) return "";
    if (game === "fight") return "team " + seat;
    var side = (SIDES[game] || [])[seat];
    return "seat " + seat + (side ? " (" + side + ")" : "");
  }

  /* A guest (a player without an account, never rated) is shown as one: "bob (guest)". */
  var GUEST_MARK = " (guest)";

  function isGuest(p) {
    return !!p && p.kind === "guest";
  }

  function playerName(players, seat) {
    for (var i = 0; i < (players || []).length; i++) {
      if (players[i].seat === seat) return players[i].name + (isGuest(players[i]) ? GUEST_MARK : "");
    }
    return "seat " + seat;
  }

  /* "seat 0 (A) alice": how a page names a player in running text. */
  function seatAndName(game, players, seat) {
    return seatLabel(game, seat) + " " + playerName(players, seat);
  }

  /* A link to a player's page; a guest's (``kind`` "guest") is followed by " (guest)". */
  function playerLink(name, kind) {
    var link = el("a", { href: "player.html?name=" + encodeURIComponent(name), class: "player-link",
                         "data-name": name, text: name });
    if (kind !== "guest") return link;
    return el("span", { class: "guest", "data-kind": "guest" }, [link, GUEST_MARK]);
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

  var server = null;

  /* /api/server, asked once per page. */
  function serverInfo() {
    if (!server) server = fetchJSON("api/server");
    return server;
  }

  /* The registered games, from /api/server. */
  function learnGames(info) {
    ((info && info.games) || []).forEach(function (g) {
      GAMES.push(g.name);
      GAME_NAMES[g.name] = g.title;
      BOARDS[g.name] = g.board;
    });
  }

  function gameLink(game) {
    return el("a", { href: "ratings.html?game=" + encodeURIComponent(game), "data-game": game,
                     text: gameName(game) });
  }

  /* The players of a table or match as links, joined by " vs " (optionally marking one). */
  function playerLinks(players, marked, markText) {
    var span = el("span", { class: "players" });
    (players || []).forEach(function (p, i) {
      if (i) span.appendChild(document.createTextNode(" vs "));
      var moving = marked !== null && marked !== undefined && p.seat === marked;
      var link = playerLink(p.name, p.kind);
      span.appendChild(el("span", { class: "player seat-" + p.seat + (moving ? " to-move" : ""),
                                    "data-seat": p.seat, title: moving ? markText : null },
                          [link, moving ? " \u25C2" : null]));
    });
    return span;
  }

  /* ---------- moves in words ---------- */

  function square(x, y) {
    return (LETTERS.charAt(x) || "?" + x) + y;
  }

  function uccUnit(token) {
    var name = UCC_UNITS[token];
    return name ? name + " (" + RANKS[name] + ")" : "unit " + token;
  }

  function unitWords(name) {
    if (!name || name === "?") return "a hidden unit";
    return RANKS[name] ? name + " (" + RANKS[name] + ")" : name;
  }

  var UCC_STEPS = { UP: [0, -1], DOWN: [0, 1], LEFT: [-1, 0], RIGHT: [1, 0] };

  /* A UCC Stratego move as the referee confirmed it ("0 3 DOWN 3 VICTORY_FLAG", x y from the top
     left) in words: "A3 → A6: takes the flag". */
  function strategoMove(text) {
    var m = /^(\d+) (\d+) (UP|DOWN|LEFT|RIGHT)(?: (\d+))?(?: (.*))?$/.exec(text);
    if (!m) return text;
    var x = Number(m[1]), y = Number(m[2]), n = m[4] ? Number(m[4]) : 1, step = UCC_STEPS[m[3]];
    var where = square(x, y) + " \u2192 " + square(x + step[0] * n, y + step[1] * n);
    var r = (m[5] || "").split(" ");
    switch (r[0]) {
      case "": case "OK": return where;
      case "VICTORY_FLAG": return where + ": takes the flag";
      case "VICTORY_ATTRITION": return where + ": the other side has no movable unit left";
      case "ILLEGAL": return where + ": an illegal move";
      case "KILLS": return where + ": " + uccUnit(r[1]) + " takes " + uccUnit(r[2]);
      case "DIES": return where + ": " + uccUnit(r[1]) + " attacks " + uccUnit(r[2]) + " and is lost";
      case "BOTHDIE": return where + ": " + uccUnit(r[1]) + " and " + uccUnit(r[2]) + " are both lost";
    }
    return where + " " + m[5];
  }

  /* A Combat move as the server reports it ("2,3-2,4", "2,3x2,4 scout>bomb: dies") in words:
     "C3 → C4: scout (9) attacks bomb (B) and is lost". */
  function combatMove(text) {
    var m = /^(\d+),(\d+)([-x])(\d+),(\d+)(?: ([a-z?]+)>([a-z?]+): (\w+))?$/.exec(text);
    if (!m) return text;
    var where = square(Number(m[1]), Number(m[2])) + " \u2192 " + square(Number(m[4]), Number(m[5]));
    if (m[3] === "-" || !m[6]) return where;
    var a = unitWords(m[6]), d = unitWords(m[7]);
    switch (m[8]) {
      case "flag": return where + ": takes the flag";
      case "kills": return where + ": " + a + " takes " + d;
      case "dies": return where + ": " + a + " attacks " + d + " and is lost";
      case "bothdie": return where + ": " + a + " and " + d + " are both lost";
    }
    return where + ": " + a + " attacks " + d;
  }

  function rowCol(x, y) { return y + "," + x; }

  /* What happened to the warriors between two Virtual Fight states: moves, turns and deaths
     ("0.3 moves to 4,7", "1.2 dies at 5,6"; squares as row,col). A shooter's turn to its shot's
     direction, and the warriors of a team that ``gone`` says left the game, go without saying. */
  function fightChanges(before, after, gone) {
    if (!before || !after) return [];
    var was = {}, shot = {};
    (before.warriors || []).forEach(function (w) { was[w.team + "." + w.id] = w; });
    (after.shots || []).forEach(function (s) { shot[s.team + "." + s.id] = true; });
    var out = [];
    (after.warriors || []).forEach(function (w) {
      var old = was[w.team + "." + w.id];
      if (!old) return;
      var who = w.team + "." + w.id;
      if (old.alive !== false && w.alive === false) {
        if (!gone[w.team]) out.push(who + " dies at " + rowCol(w.x, w.y));
      } else if (w.alive !== false && (old.x !== w.x || old.y !== w.y)) {
        out.push(who + " moves to " + rowCol(w.x, w.y));
      } else if (w.alive !== false && old.facing !== w.facing && !shot[who]) {
        out.push(who + " turns " + String(w.facing).toLowerCase());
      }
    });
    return out;
  }

  /* A move of ``game`` in words (``before`` is the state before it, when known). */
  function moveWords(game, m, before) {
    var text = String(m.move);
    if (game === "stratego") return strategoMove(text);
    if (game === "combat") return combatMove(text);
    if (game === "connect4" && /^\d+$/.test(text)) return "column " + text;
    if (game === "fight") {
      var gone = {};  // "azure (team 1) left", "blue (team 1) disqualified after 10 timeouts..."
      text.replace(/\(team (\d+)\)/g, function (_, team) { gone[team] = true; return _; });
      var changes = fightChanges(before, m.state, gone);
      var body = text.replace(/^turn \d+:?\s*/i, "");
      var parts = (body ? [body] : []).concat(changes);
      return parts.length ? parts.join("; ") : "nothing happened";
    }
    return text;
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
                           role: "grid", "aria-label": "Virtual Fight map, " + h + " rows by " + w +
                           " columns (squares as row,col)" });
    var cells = {};
    for (var y = 0; y < h; y++) {
      var row = el("div", { class: "grid-row", role: "row" });
      for (var x = 0; x < w; x++) {
        var wall = (walls[y] || "").charAt(x) === "#";
        var cell = el("div", { class: "cell" + (wall ? " wall" : ""), "data-x": x, "data-y": y,
                               role: "gridcell", title: rowCol(x, y),
                               "aria-label": (wall ? "wall at " : "") + rowCol(x, y) });
        cells[x + "," + y] = cell;
        row.appendChild(cell);
      }
      grid.appendChild(row);
    }
    (state.warriors || []).forEach(function (wr) {
      var cell = cells[wr.x + "," + wr.y];
      if (!cell) return;
      var alive = wr.alive !== false;
      var name = "team " + wr.team + " warrior " + wr.id + " at " + rowCol(wr.x, wr.y);
      cell.appendChild(el("span", {
        class: "warrior team-" + wr.team + (alive ? "" : " dead"),
        "data-team": wr.team, "data-id": wr.id, "data-facing": wr.facing, "data-alive": alive,
        role: "img", title: name,
        "aria-label": name + (alive ? ", facing " + String(wr.facing).toLowerCase() : ", dead")
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
        "Shots last turn (squares as row,col): " + shots.map(function (s) {
          return "team " + s.team + " warrior " + s.id + " " + rowCol(s.from[0], s.from[1]) +
                 " \u2192 " + rowCol(s.to[0], s.to[1]);
        }).join("; ")
      ]));
    }
  }

  function renderStratego(box, state, game) {
    var w = state.width, h = state.height, rows = state.cells || [];
    var last = {};
    (state.last || []).forEach(function (p) { if (p) last[p[0] + "," + p[1]] = true; });
    var grid = el("div", { class: "grid stratego", style: "--cols:" + (w + 1) + ";--rows:" + (h + 1),
                           role: "grid", "aria-label": "board " + w + " by " + h });
    var head = el("div", { class: "grid-row", role: "row" }, [el("div", { class: "corner", "aria-hidden": "true" })]);
    for (var cx = 0; cx < w; cx++) {
      head.appendChild(el("div", { class: "col-label", role: "columnheader", text: LETTERS.charAt(cx) }));
    }
    grid.appendChild(head);
    for (var y = 0; y < h; y++) {
      var row = el("div", { class: "grid-row", role: "row" },
                   [el("div", { class: "row-label", role: "rowheader", text: y })]);
      for (var x = 0; x < w; x++) {
        var c = (rows[y] || [])[x];
        var cls = "cell" + (c === "lake" ? " lake" : "") + (last[x + "," + y] ? " last" : "");
        var where = square(x, y);
        var cell = el("div", { class: cls, "data-x": x, "data-y": y, role: "gridcell", title: where,
                               "aria-label": c === "lake" ? where + ": lake" : null });
        if (c && c !== "lake") {
          var hidden = c.unit === null || c.unit === undefined;
          var owner = seatLabel(game, c.owner);
          cell.appendChild(el("span", {
            class: "unit seat-" + c.owner + (hidden ? " hidden" : ""), "data-owner": c.owner,
            "data-unit": hidden ? "" : c.unit, role: "img",
            title: where + ": " + owner + " " + (hidden ? "hidden unit" : unitWords(c.unit)),
            "aria-label": where + ": " + owner + " " + (hidden ? "hidden unit" : unitWords(c.unit)),
            text: hidden ? "?" : (RANKS[c.unit] || String(c.unit).slice(0, 2).toUpperCase())
          }));
        }
        row.appendChild(cell);
      }
      grid.appendChild(row);
    }
    box.appendChild(grid);
    box.appendChild(el("p", { class: "legend", text: LEGEND }));
  }

  function renderConnect4(box, state) {
    var w = state.width, h = state.height, cols = state.cells || [];
    var win = {};
    // Every line the last stone completed (win_lines; older records have win_line only).
    var lines = state.win_lines || (state.win_line ? [state.win_line] : []);
    lines.forEach(function (line) {
      var a = line[0], b = line[1];
      var dx = Math.sign(b[0] - a[0]), dy = Math.sign(b[1] - a[1]);
      var steps = Math.max(Math.abs(b[0] - a[0]), Math.abs(b[1] - a[1]));
      for (var k = 0; k <= steps; k++) win[(a[0] + k * dx) + "," + (a[1] + k * dy)] = true;
    });
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
            "aria-label": seatLabel("connect4", s) + (win[x + "," + y] ? ", winning line" : ""),
            text: s === 0 ? "X" : s === 1 ? "O" : String(s)
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

  // By board kind (BOARDS: a game's "board" in /api/server).
  var RENDERERS = {
    kalaha: renderKalaha, fight: renderFight, stratego: renderStratego, connect4: renderConnect4
  };

  function render(box, game, state) {
    clear(box);
    box.setAttribute("data-game", game);
    if (!state) {
      box.appendChild(el("p", { class: "empty", text: "No position to show." }));
      return;
    }
    var fn = RENDERERS[BOARDS[game] || game];
    try {
      if (fn) { fn(box, state, game); return; }
    } catch (e) {
      clear(box);
    }
    box.appendChild(el("pre", { class: "raw-state", text: JSON.stringify(state, null, 1) }));
  }

  /* ---------- shared pieces of the pages ---------- */

  /* How long an away player has to come back: " until 12:34:56" (the page's clock). */
  function backBy(when) {
    if (typeof when !== "number") return "";
    return " until " + new Date(when * 1000).toLocaleTimeString();
  }

  function renderPlayers(list, game, players, toMove) {
    clear(list);
    list.setAttribute("data-game", game);
    (players || []).forEach(function (p) {
      var moving = toMove !== null && toMove !== undefined && p.seat === toMove;
      list.appendChild(el("li", {
        "data-seat": p.seat, class: "seat-" + p.seat + (moving ? " to-move" : "")
      }, [
        el("span", { class: "swatch seat-" + p.seat, "aria-hidden": "true" }),
        el("span", { class: "seat", text: seatLabel(game, p.seat) + ": " }),
        el("span", { class: "name" }, [playerLink(p.name, p.kind)]),
        moving ? el("span", { class: "badge", text: " (to move)" }) : null,
        p.away ? el("span", { class: "badge away", text: " (away" + backBy(p.back_by) + ")" }) : null
      ]));
    });
  }

  function moveItem(game, players, m, asButton, before) {
    var who = (m.seat === null || m.seat === undefined) ? "" : seatAndName(game, players, m.seat) + ": ";
    var label = (game === "fight" ? "turn " + m.n + ": " : m.n + ". ") + who + moveWords(game, m, before);
    var li = el("li", { "data-n": m.n, "data-seat": m.seat === null ? null : m.seat,
                        class: m.seat === null || m.seat === undefined ? "" : "seat-" + m.seat,
                        title: String(m.move) });
    if (asButton) li.appendChild(el("button", { type: "button", "data-n": m.n, text: label }));
    else li.appendChild(el("span", { text: label }));
    if (typeof m.t === "number") {
      li.appendChild(el("span", { class: "t", text: " " + m.t.toFixed(1) + " s" }));
    }
    clockItems(game, m).forEach(function (c) { li.appendChild(c); });
    return li;
  }

  /* Seconds a move used: to the hundredth below 10 s (programs move in milliseconds). */
  function formatUsed(seconds) {
    return (seconds < 10 ? seconds.toFixed(2) : seconds.toFixed(1)) + " s";
  }

  /* What a stored move cost each seat's clock ("used 1.23 s, left 0:58.8"; the seat is named
     when it is not the mover's or the move has several), one span.clock per seat; none for a
     move without a clock. */
  function clockItems(game, m) {
    var clock = m.clock;
    if (!clock || typeof clock !== "object") return [];
    var seats = Object.keys(clock).sort(function (a, b) { return Number(a) - Number(b); });
    var out = [];
    seats.forEach(function (k) {
      var c = clock[k] || {};
      var words = [];
      if (typeof c.used === "number") words.push("used " + formatUsed(c.used));
      if (typeof c.left === "number") words.push("left " + formatClock(c.left));
      if (!words.length) return;
      var who = seats.length > 1 || String(m.seat) !== k ? seatLabel(game, Number(k)) + " " : "";
      out.push(el("span", { class: "clock", "data-seat": k,
                            "data-used": typeof c.used === "number" ? c.used : null,
                            "data-left": typeof c.left === "number" ? c.left : null,
                            text: " \u00b7 " + who + words.join(", ") }));
    });
    return out;
  }

  function showResult(outcome, reason, matchId) {
    var box = $("result");
    if (!box) return;
    clear(box);
    if (outcome === null || outcome === undefined) { box.hidden = true; return; }
    box.setAttribute("data-reason", reason || "");
    box.appendChild(el("strong", { text: outcome || "finished" }));
    if (matchId !== null && matchId !== undefined) {
      box.appendChild(document.createTextNode(" "));
      box.appendChild(el("a", { href: "replay.html?id=" + encodeURIComponent(matchId),
                                "data-match": matchId, text: "Replay this match" }));
    }
    box.hidden = false;
  }

  /* A table row of a finished match: game, players (or the given cells), result, end, replay. */
  function matchRow(m, middle) {
    var players = (m.seats || []).map(function (s) { return { seat: s.seat, name: s.name, kind: s.kind }; });
    return el("tr", { "data-id": m.id, "data-game": m.game }, [
      el("td", { class: "game", "data-label": "Game" }, [gameName(m.game)])
    ].concat(middle || [
      el("td", { class: "players", "data-label": "Players" }, [playerLinks(players)])
    ]).concat([
      el("td", { class: "result", "data-label": "Result", text: m.outcome || m.reason }),
      el("td", { class: "ended", "data-label": "Ended", text: formatTime(m.ended) }),
      el("td", { class: "watch" }, [el("a", { href: "replay.html?id=" + encodeURIComponent(m.id),
                                              text: "Replay", "aria-label": "Replay match " + m.id })])
    ]));
  }

  function emptyRow(body, columns, text) {
    body.appendChild(el("tr", { class: "empty" }, [el("td", { colspan: columns, text: text })]));
  }

  /* ---------- index.html ---------- */

  var LOOPBACK = /^(127\.|::1$|localhost$)/;

  /* What to type to play on one listening port (``p`` from /api/server). */
  function howTo(p) {
    var host = p.host && p.host !== "0.0.0.0" && p.host !== "::" ? p.host : window.location.hostname;
    var port = p.port;
    var connect = p.tls ? "openssl s_client -quiet -connect " + host + ":" + port
                        : "telnet " + host + " " + port;
    var combat = "gamed-combat --host " + host + " --port " + port;
    var url = (p.tls ? "https://" : "http://") + host + ":" + port + "/";
    switch (p.serves) {
      case "kalaha":
        return ["Kalaha, for people and programs: connect, type ", "NAME <you>",
                " and wait for an opponent, or ", "COMPUTER", " to play the computer; then a pit (",
                "A3", " or ", "3", ") when you see YOURMOVE. ", "HELP", " lists every command.", connect];
      case "fight":
        return ["Virtual Fight, for AI programs: each line commands one of five warriors (",
                "0&MOVE&UP", ", ", "1&SHOOT&LEFT", ", ", "2&NONE", "); squares are row,col. ",
                "HELP", " lists every command.", connect];
      case "fight-gui":
        return ["Watch Virtual Fight games as text lines: ", "LIST", " shows the games, ",
                "WATCH&<id>", " follows one.", connect];
      case "combat":
        return ["GGZ Combat (Stratego for 2 to 15 seats), for GGZ Combat clients and bots, or " +
                "people with the terminal client (the first at a table chooses the map):", null,
                combat + " --random-setup"];
      case "combat-text":
        return ["Combat by name: a table of your own (others join it by name) or a game against " +
                "a computer opponent (", "--list-computers", " lists them):", null,
                combat + " --name <you> --table <table>"];
      case "connect4":
        return ["Connect Four against people or engines: ", "ENGINES", " lists the engines, ",
                "PLAY solver:2", " plays the perfect solver, ", "TABLE", " waits for a person; " +
                "type a column (0 is the left) to drop a stone. ", "HELP", " lists every command.",
                connect];
      case "web":
        return ["This web site (live games, replays, players, leaderboards, and the JSON API " +
                "under /api/):", null, url];
    }
    return ["Port " + p.serves + ":", null, connect];
  }

  function renderHowTo(list, ports) {
    clear(list);
    if (!ports.length) {
      list.appendChild(el("li", { class: "empty", text: "This daemon listens on no port." }));
      return;
    }
    ports.forEach(function (p) {
      var parts = howTo(p), command = parts.pop(), words = [];
      parts.forEach(function (part, i) {
        // Odd parts are what to type (code), even parts are words.
        if (part !== null) words.push(i % 2 ? el("code", { text: part }) : part);
      });
      var local = LOOPBACK.test(String(p.host)) && !LOOPBACK.test(window.location.hostname);
      list.appendChild(el("li", { "data-serves": p.serves, "data-address": p.address }, [
        el("strong", { text: p.name }), " ",
        el("span", { class: "address", text: p.address + (p.tls ? " (TLS)" : "") }),
        local ? el("span", { class: "note", text: " (on the server's own machine only)" }) : null,
        el("br"),
        el("span", { class: "words" }, words),
        el("br"),
        el("code", { class: "command", text: command })
      ]));
    });
  }

  function pageIndex() {
    var lb = $("leaderboards");
    GAMES.forEach(function (g) { lb.appendChild(el("li", {}, [gameLink(g)])); });

    serverInfo().then(function (server) {
      renderHowTo($("ports"), server.ports || []);
    }, function (err) {
      var list = $("ports");
      clear(list);
      list.appendChild(el("li", { class: "empty", text: "Cannot load the ports: " + err.message + "." }));
    });

    function games(list) {
      var body = $("games").querySelector("tbody");
      clear(body);
      if (!list.length) emptyRow(body, 5, "No games are being played right now.");
      list.forEach(function (g) {
        body.appendChild(el("tr", { "data-id": g.id, "data-game": g.game, "data-turn": g.turn }, [
          el("td", { class: "game", "data-label": "Game" }, [gameName(g.game)]),
          el("td", { class: "players", "data-label": "Players" }, [playerLinks(g.players, g.to_move, "to move")]),
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
      if (!list.length) emptyRow(body, 5, "No finished matches yet.");
      list.forEach(function (m) { body.appendChild(matchRow(m)); });
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
    var lastState = null;

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
        // The seat to move's clock runs; in a simultaneous turn (Virtual Fight) every team's does.
        var running = seat === toMove || (toMove === null && table.game === "fight");
        if (v !== null && v !== undefined && running) v = v - elapsed;
        list.appendChild(el("li", { "data-seat": seat, "data-seconds": v === null ? null : v,
                                    class: "seat-" + seat + (running && !ended ? " to-move" : "") }, [
          el("span", { class: "name", text: seatAndName(table.game, table.players, seat) + ": " }),
          el("span", { class: "clock", text: formatClock(v) })
        ]));
      });
    }

    function setTurn(turn, mover, outcome) {
      toMove = ended ? null : (mover === undefined ? null : mover);
      $("turn").textContent = turn;
      board.setAttribute("data-turn", turn);
      $("to-move-line").hidden = ended;
      $("over").hidden = !ended;
      $("over").textContent = ended ? "; finished: " + (outcome || "the game is over") : "";
      $("to-move").textContent = ended ? "" :
        toMove === null ? (table.game === "fight" ? "every team at once" : "\u2013") :
        seatAndName(table.game, table.players, toMove);
      renderPlayers($("players"), table.game, table.players, toMove);
    }

    function snapshot(t) {
      table = t;
      ended = !!t.result;
      lastState = t.state;
      $("game-name").textContent = gameName(t.game);
      $("game-name").setAttribute("href", "ratings.html?game=" + encodeURIComponent(t.game));
      $("play-link").setAttribute("href", "play.html?game=" + encodeURIComponent(t.game));
      moves.setAttribute("data-game", t.game);
      render(board, t.game, t.state);
      clear(moves);
      (t.moves || []).forEach(function (m) { moves.appendChild(moveItem(t.game, t.players, m)); });
      clocks = t.clocks || {};
      clockAt = Date.now();
      setTurn(t.turn, t.to_move, t.outcome);
      drawClocks();
      showResult(t.result ? t.outcome : null, t.result && t.result.reason, null);
    }

    function moved(m) {
      render(board, table.game, m.state);
      var li = moveItem(table.game, table.players, m, false, lastState);
      lastState = m.state;
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
        setTurn($("turn").textContent, null, d.outcome);
        drawClocks();
        showResult(d.outcome, d.result && d.result.reason, d.match_id);
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

  /* "1500 ± 980 → 1540 ± 900": a rated seat's rating (and its 95 % interval) before and after
     the match, beside its name on the replay page. */
  function ratingText(mu, sigma) {
    return Math.round(mu) + (sigma === null || sigma === undefined ? "" : " \u00b1 " + Math.round(1.959964 * sigma));
  }

  function ratingChanges(list, seats) {
    seats.forEach(function (s) {
      if (s.rating_before === null || s.rating_before === undefined) return;
      var li = list.querySelector('li[data-seat="' + s.seat + '"]');
      if (!li) return;
      var after = s.rating_after === null || s.rating_after === undefined ? "?" : ratingText(s.rating_after, s.sigma_after);
      li.appendChild(el("span", { class: "rating-change", "data-before": s.rating_before, "data-after": s.rating_after,
                                  text: " " + ratingText(s.rating_before, s.sigma_before) + " \u2192 " + after }));
    });
  }

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
        (current.seat === null || current.seat === undefined ? "turn " + current.n + ": " :
         seatAndName(match.game, players, current.seat) + ": ") +
        moveWords(match.game, current, states[step - 1]) : "Start position";
      Array.prototype.forEach.call(list.children, function (li) {
        if (Number(li.getAttribute("data-n")) === step) {
          li.setAttribute("aria-current", "step");
          if (li.scrollIntoView) li.scrollIntoView({ block: "nearest" });
        } else {
          li.removeAttribute("aria-current");
        }
      });
      showResult(step === total ? match.outcome : null, match.reason, null);
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
      players = (m.seats || []).map(function (s) { return { seat: s.seat, name: s.name, kind: s.kind }; });
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
      ratingChanges($("players"), m.seats || []);
      list.setAttribute("data-game", m.game);
      clear(list);
      (m.moves || []).forEach(function (mv, k) {
        list.appendChild(moveItem(m.game, players, mv, true, states[k]));
      });
      slider.max = states.length - 1;
      slider.disabled = false;
      // Moves the records no longer have: pruned after [records] keep_moves days, or past the
      // moves one match keeps; the result and the ratings are kept all the same.
      var note = $("moves-note"), gone = m.extra && m.extra.moves_not_kept;
      if (note && gone) {
        note.textContent = m.extra.moves_pruned ?
          "The " + gone + " moves of this match were pruned from the records on " + formatTime(m.extra.moves_pruned) +
            " (older than the records keep moves); its result and ratings are kept." :
          "The last " + gone + " moves of this match were not kept.";
        note.hidden = false;
      }
      setStatus("");
      var wanted = Number(param("step"));
      go(Number.isFinite(wanted) && param("step") !== null ? wanted : 0);
    }, function (err) {
      setStatus("");
      showError("Cannot load match " + id + ": " + err.message + ".");
    });
  }

  /* ---------- ratings.html ---------- */

  /* The attributes of a rating's row, and its cell: "1620 ± 85" (the half-width of the 95 %
   * interval the API gives) and a "?" while the rating is provisional. */
  function ratingData(r, extra) {
    extra["data-rating"] = r.rating;
    extra["data-sigma"] = r.sigma;
    extra["data-conservative"] = r.conservative;
    extra["data-provisional"] = r.provisional ? "true" : "false";
    return extra;
  }

  function ratingCell(r) {
    var text = Math.round(r.rating) + " \u00b1 " + Math.round((r.high - r.low) / 2);
    var parts = [text];
    if (r.provisional) {
      parts.push(" ");
      parts.push(el("abbr", { class: "provisional", text: "?",
                              title: "provisional: too few games or still too uncertain" }));
    }
    return el("td", { class: "rating", "data-label": "Rating" }, parts);
  }

  function pageRatings() {
    var game = param("game") || GAMES[0] || "";
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
      if (!rows.length) emptyRow(body, 7, "Nobody is rated in this game yet.");
      rows.forEach(function (r, i) {
        body.appendChild(el("tr", ratingData(r, { "data-name": r.name, "data-rank": i + 1 }), [
          el("td", { class: "rank", "data-label": "Rank", text: i + 1 }),
          el("td", { class: "name", "data-label": "Player" }, [playerLink(r.name)]),
          ratingCell(r),
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

  /* ---------- player.html ---------- */

  function pagePlayer() {
    var name = param("name");
    if (!name) { showError("No player given (player.html?name=...)."); setStatus(""); return; }
    $("title").textContent = name;
    document.title = name + " \u2014 gamed";
    var ratings = $("player-ratings").querySelector("tbody");
    var matches = $("player-matches").querySelector("tbody");
    var live = $("player-games").querySelector("tbody");
    setStatus("Loading\u2026");
    fetchJSON("api/games").then(function (d) {
      clear(live);
      var playing = (d.games || []).filter(function (g) {
        return (g.players || []).some(function (p) { return p.name === name; });
      });
      if (!playing.length) emptyRow(live, 4, name + " is not playing right now.");
      playing.forEach(function (g) {
        live.appendChild(el("tr", { "data-id": g.id, "data-game": g.game }, [
          el("td", { class: "game", "data-label": "Game" }, [gameName(g.game)]),
          el("td", { class: "players", "data-label": "Players" }, [playerLinks(g.players)]),
          el("td", { class: "turn", "data-label": "Turn", text: g.turn }),
          el("td", { class: "watch" }, [el("a", { href: "game.html?id=" + encodeURIComponent(g.id),
                                                  text: "Watch", "aria-label": "Watch " + g.id })])
        ]));
      });
    }, function () { clear(live); });
    fetchJSON("api/players/" + encodeURIComponent(name) + "?unplayed=no&limit=50").catch(function (err) {
      // A name without a finished match (a first game still running, or a typo) is no error.
      if (/^no player/.test(err.message)) return { name: name, ratings: [], matches: [] };
      throw err;
    }).then(function (d) {
      setStatus("");
      clear(ratings);
      if (!d.ratings.length) emptyRow(ratings, 7, name + " is not rated in any game yet.");
      d.ratings.forEach(function (r) {
        ratings.appendChild(el("tr", ratingData(r, { "data-game": r.game }), [
          el("td", { class: "game", "data-label": "Game" }, [gameLink(r.game)]),
          ratingCell(r),
          el("td", { class: "rank", "data-label": "Rank", text: r.rank }),
          el("td", { class: "games", "data-label": "Games", text: r.games }),
          el("td", { class: "wins", "data-label": "Won", text: r.wins }),
          el("td", { class: "draws", "data-label": "Drawn", text: r.draws }),
          el("td", { class: "losses", "data-label": "Lost", text: r.losses })
        ]));
      });
      clear(matches);
      if (!d.matches.length) emptyRow(matches, 6, name + " has no finished matches yet.");
      d.matches.forEach(function (m) {
        var seats = m.seats || [];
        var own = seats.filter(function (s) { return s.name === name; });
        var others = seats.filter(function (s) { return s.name !== name; });
        matches.appendChild(matchRow(m, [
          el("td", { class: "seat", "data-label": "Seat",
                     text: own.map(function (s) {
                       return seatLabel(m.game, s.seat) + (isGuest(s) ? GUEST_MARK : "");
                     }).join(", ") }),
          el("td", { class: "opponents", "data-label": "Against" }, [playerLinks(others)])
        ]));
      });
    }, function (err) {
      setStatus("");
      clear(ratings);
      clear(matches);
      showError("Cannot load " + name + ": " + err.message + ".");
    });
  }

  /* ---------- tournaments.html, tournament.html ---------- */

  var SVG = "http://www.w3.org/2000/svg";
  var REFRESH = 5000;  // ms between looks at a running tournament

  function pageTournaments() {
    var body = $("tournaments").querySelector("tbody");
    fetchJSON("api/tournaments").then(function (d) {
      setStatus("");
      clear(body);
      var rows = d.tournaments || [];
      if (!rows.length) emptyRow(body, 5, "No tournaments yet.");
      rows.forEach(function (t) {
        body.appendChild(el("tr", { "data-name": t.name }, [
          el("td", { class: "name", "data-label": "Tournament" }, [
            el("a", { href: "tournament.html?name=" + encodeURIComponent(t.name), text: t.name })]),
          el("td", { class: "game", "data-label": "Game" }, [gameName(t.game)]),
          el("td", { class: "format", "data-label": "Format", text: t.format }),
          el("td", { class: "state", "data-label": "State", text: t.state }),
          el("td", { class: "games", "data-label": "Games", text: t.played + "/" + t.scheduled })
        ]));
      });
    }, function (err) {
      setStatus("");
      showError("Cannot load the tournaments: " + err.message + ".");
    });
  }

  function shown(x, digits) {
    return x === null || x === undefined ? "?" : Number(x).toFixed(digits || 0);
  }

  /* The LLR after each pair, with the SPRT's two bounds, as an SVG line chart. */
  function drawCurve(svg, curve, lower, upper) {
    clear(svg);
    var w = 600, h = 200, pad = 24;
    var values = curve.concat([lower || 0, upper || 0, 0]);
    var top = Math.max.apply(null, values), bottom = Math.min.apply(null, values);
    if (top === bottom) { top += 1; bottom -= 1; }
    var n = Math.max(curve.length, 1);
    function x(i) { return pad + (w - 2 * pad) * i / n; }
    function y(v) { return pad + (h - 2 * pad) * (top - v) / (top - bottom); }
    [[upper, "bound upper"], [lower, "bound lower"], [0, "axis"]].forEach(function (b) {
      if (b[0] === null || b[0] === undefined) return;
      svg.appendChild(el("line", { _ns: SVG, class: b[1], x1: pad, x2: w - pad, y1: y(b[0]), y2: y(b[0]) }));
      if (b[1] !== "axis") svg.appendChild(el("text", { _ns: SVG, class: "bound-label", x: w - pad, y: y(b[0]) - 3,
                                                       "text-anchor": "end", text: b[0].toFixed(2) }));
    });
    var points = [x(0) + "," + y(0)];
    curve.forEach(function (v, i) { points.push(x(i + 1) + "," + y(v)); });
    svg.appendChild(el("polyline", { _ns: SVG, class: "llr", points: points.join(" "), "data-pairs": curve.length }));
  }

  function pageTournament() {
    var name = param("name");
    if (!name) { showError("No tournament given (tournament.html?name=...)."); setStatus(""); return; }
    $("title").textContent = name;
    document.title = name + " \u2014 gamed";
    function load() {
      fetchJSON("api/tournaments/" + encodeURIComponent(name)).then(function (t) {
        setStatus(t.state === "running" ? "Running: refreshed every few seconds." : "");
        showError("");
        $("description").textContent = gameName(t.game) + ": " + t.description;
        var p = t.progress, bar = $("progress");
        bar.max = p.total || Math.max(p.scheduled, 1);
        bar.value = p.played;
        $("progress-text").textContent = p.played + (p.total ? " of " + p.total : " of " + p.scheduled + " scheduled") +
          " games played, " + t.state;
        var m = t.match;
        $("match-section").hidden = !m;
        if (m) {
          var line = m.first + " against " + m.second + ": " + m.wins + " won, " + m.draws + " drawn, " +
            m.losses + " lost; pairs " + m.pentanomial.join("/") + "; Elo " + shown(m.elo, 1) +
            " (" + shown(m.low, 1) + " to " + shown(m.high, 1) + ", 95 %); LOS " + (m.los * 100).toFixed(1) + " %";
          if (m.llr !== null && m.llr !== undefined) {
            line += "; LLR " + m.llr.toFixed(2) + " (" + m.lower.toFixed(2) + ", " + m.upper.toFixed(2) + ")" +
              (m.decision ? ": " + m.decision : "");
          }
          $("match-line").textContent = line;
          drawCurve($("llr-curve"), t.llr_curve || [], m.lower, m.upper);
        }
        var body = $("standings").querySelector("tbody");
        clear(body);
        t.standings.forEach(function (s) {
          var rating = s.rating === null ? "?" : Math.round(s.rating) + " \u00b1 " + Math.round((s.high - s.low) / 2);
          body.appendChild(el("tr", { "data-bot": s.bot }, [
            el("td", { class: "rank", "data-label": "#", text: s.rank }),
            el("td", { class: "bot", "data-label": "Bot", text: s.bot }),
            el("td", { class: "points", "data-label": "Points", text: s.points }),
            el("td", { class: "games", "data-label": "Games", text: s.games }),
            el("td", { class: "wins", "data-label": "Won", text: s.wins }),
            el("td", { class: "draws", "data-label": "Drawn", text: s.draws }),
            el("td", { class: "losses", "data-label": "Lost", text: s.losses }),
            el("td", { class: "rating", "data-label": "Rating (95 %)", text: rating }),
            el("td", { class: "faults", "data-label": "Faults", text: s.faults })
          ]));
        });
        var bots = Object.keys(t.crosstable);
        var head = $("crosstable").querySelector("thead"), cross = $("crosstable").querySelector("tbody");
        clear(head); clear(cross);
        head.appendChild(el("tr", {}, [el("th", { scope: "col", text: "" })].concat(bots.map(function (b) {
          return el("th", { scope: "col", text: b });
        }))));
        bots.forEach(function (a) {
          cross.appendChild(el("tr", { "data-bot": a }, [el("th", { scope: "row", text: a })].concat(bots.map(function (b) {
            var cell = a === b ? null : t.crosstable[a][b];
            return el("td", { "data-against": b, text: cell ? cell[0] + "/" + cell[1] : "\u2014" });
          }))));
        });
        var games = $("tournament-games").querySelector("tbody");
        clear(games);
        t.games.forEach(function (g) {
          var result = g.scores === null ? "in play" : (g.outcome || g.reason) +
            (g.faults.some(function (f) { return f; }) ? " (" + g.faults.filter(function (f) { return f; }).join("; ") + ")" : "");
          games.appendChild(el("tr", { "data-number": g.number }, [
            el("td", { class: "number", "data-label": "#", text: g.number }),
            el("td", { class: "pair", "data-label": "Pair", text: g.pair }),
            el("td", { class: "opening", "data-label": "Opening", text: g.opening }),
            el("td", { class: "seats", "data-label": "Seats", text: g.seats.join(" \u2013 ") }),
            el("td", { class: "result", "data-label": "Result", text: result }),
            el("td", { class: "watch" }, g.match_id ? [el("a", { href: "replay.html?id=" + encodeURIComponent(g.match_id),
                                                                 text: "Replay", "aria-label": "Replay game " + g.number })] : [])
          ]));
        });
        if (t.state === "running") window.setTimeout(load, REFRESH);
      }, function (err) {
        setStatus("");
        showError("Cannot load " + name + ": " + err.message + ".");
      });
    }
    load();
  }

  /* ---------- play.html ---------- */

  /* A person plays through the bot API (docs/web-api.md): a guest's name and token from
     POST api/bot/guest (or an account's name and token), the NDJSON stream read with fetch,
     the requests POSTed. The legal actions of each state are buttons (#actions), and on the
     boards that have them the pits and columns to play are highlighted and clickable. */
  function pagePlay() {
    var who = null;          // {name, token}: the Bearer credentials
    var games = {};          // the games reply, by name
    var seat = null;
    var current = null;      // the state last received
    var board = $("board");
    var wanted = param("game");

    function auth() { return { "Authorization": "Bearer " + who.name + ":" + who.token }; }

    function post(kind, body) {
      var headers = who ? auth() : {};
      headers["Content-Type"] = "application/json";
      return fetch("api/bot/" + kind, { method: "POST", headers: headers, body: JSON.stringify(body || {}) })
        .then(function (r) { return r.json(); })
        .then(function (answer) {
          if (answer.type === "error") showError(answer.text + (answer.retries_left !== undefined && answer.retries_left !== null ?
            " (" + answer.retries_left + " more and you lose)" : ""));
          else showError("");
          return answer;
        });
    }

    function fillGames(list) {
      var select = $("game");
      clear(select);
      list.forEach(function (g) {
        games[g.name] = g;
        select.appendChild(el("option", { value: g.name, text: g.title || gameName(g.name) }));
      });
      if (wanted && games[wanted]) select.value = wanted;
      fillOpponents();
    }

    function fillOpponents() {
      var g = games[$("game").value];
      var select = $("opponent");
      clear(select);
      if (!g) return;
      $("game-title").textContent = g.title || gameName(g.name);
      (g.opponents || []).forEach(function (kind) {
        if (kind === "engine") {
          Object.keys(g.levels || { "": "" }).forEach(function (level) {
            select.appendChild(el("option", { value: "engine:" + level, text: "the computer" + (level ? " (" + level + ")" : "") }));
          });
        } else if (kind === "person") {
          select.appendChild(el("option", { value: "person:", text: "a person (or a bot)" }));
        }
      });
    }

    function act(answer) {
      if (!current) return;
      post("act", { action: answer, turn: current.turn });
    }

    function markLegal(game, actions) {
      var legal = {};
      actions.forEach(function (a, i) { legal[a] = i; });
      function clickable(node, action) {
        node.classList.add("legal");
        node.setAttribute("tabindex", "0");
        node.setAttribute("data-action", action);
        node.addEventListener("click", function () { act(action); });
        node.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") act(action); });
      }
      var kind = BOARDS[game] || game;
      if (kind === "kalaha") {
        board.querySelectorAll(".pit").forEach(function (pit) {
          var name = KALAHA_SIDES[Number(pit.getAttribute("data-seat"))] + (Number(pit.getAttribute("data-index")) + 1);
          if (name in legal) clickable(pit, name);
        });
      } else if (kind === "connect4") {
        board.querySelectorAll(".cell").forEach(function (cell) {
          var column = cell.getAttribute("data-x");
          if (column in legal) clickable(cell, column);
        });
      } else if (kind === "stratego") {
        markStrategoMoves(actions);
      }
    }

    // Stratego's moves are "X Y DIR [N]": a unit that has moves is a source; clicked, its
    // destinations become the targets that play the move.
    var STEPS = { UP: [0, -1], DOWN: [0, 1], LEFT: [-1, 0], RIGHT: [1, 0] };
    function markStrategoMoves(actions) {
      var bySource = {};
      actions.forEach(function (a) {
        var w = a.split(" ");
        if (w.length < 3 || !STEPS[w[2]]) return;
        var n = w.length > 3 ? Number(w[3]) : 1, d = STEPS[w[2]];
        var key = w[0] + "," + w[1];
        (bySource[key] = bySource[key] || []).push({ x: Number(w[0]) + d[0] * n, y: Number(w[1]) + d[1] * n, action: a });
      });
      function cellAt(x, y) { return board.querySelector('.cell[data-x="' + x + '"][data-y="' + y + '"]'); }
      function clearTargets() {
        board.querySelectorAll(".target, .selected").forEach(function (c) {
          c.classList.remove("target", "selected");
          if (!c.classList.contains("source")) { c.classList.remove("legal"); c.removeAttribute("data-action"); }
        });
      }
      function choose(node, key) {
        var wasSelected = node.classList.contains("selected");
        clearTargets();
        if (wasSelected) return;
        node.classList.add("selected");
        bySource[key].forEach(function (m) {
          var target = cellAt(m.x, m.y);
          if (!target) return;
          target.classList.add("legal", "target");
          target.setAttribute("data-action", m.action);
        });
      }
      board.addEventListener("click", function (e) {
        var target = e.target.closest(".cell.target");
        if (target && board.contains(target)) { act(target.getAttribute("data-action")); clearTargets(); }
      });
      Object.keys(bySource).forEach(function (key) {
        var xy = key.split(","), node = cellAt(xy[0], xy[1]);
        if (!node) return;
        node.classList.add("legal", "source");
        node.setAttribute("tabindex", "0");
        node.addEventListener("click", function (e) { if (!node.classList.contains("target")) choose(node, key); });
        node.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") choose(node, key); });
      });
    }

    function showState(m) {
      current = m;
      var game = m.game;
      $("game-area").hidden = false;
      $("turn").textContent = m.turn;
      board.setAttribute("data-turn", m.turn);
      render(board, game, m.observation);
      $("state-text").textContent = m.text;
      var list = $("actions");
      clear(list);
      var mine = m.actions || [];
      mine.forEach(function (a, i) {
        var b = el("button", { type: "button", "data-index": i, "data-action": a, text: a });
        b.addEventListener("click", function () { act(i); });
        list.appendChild(el("li", {}, [b]));
      });
      if (mine.length) markLegal(game, mine);
      // Not every legal action is listed (a setup): the person may type one.
      var typed = $("typed");
      typed.hidden = !(mine.length && m.complete === false);
      $("grammar").textContent = m.grammar || "";
      $("prompt").textContent = mine.length ? "your move" : "waiting for " + (m.to_act || []).map(function (s) { return "seat " + s; }).join(", ");
      board.setAttribute("data-to-act", (m.to_act || []).join(" "));
      var c = m.clock;
      $("clock").textContent = c && c.move !== null && c.move !== undefined && mine.length ? formatClock(c.move) + " for this move" : "–";
    }

    function message(m) {
      if (m.type === "started") {
        seat = m.seat;
        var seats = $("seats");
        clear(seats);
        m.seats.forEach(function (name, i) {
          seats.appendChild(el("li", { "data-seat": i, class: i === seat ? "you" : "",
                                       text: "seat " + i + " " + name + (i === seat ? " (you)" : "") }));
        });
        $("result").hidden = true;
        $("join").hidden = true;
        setStatus("Playing " + gameName(m.game));
      } else if (m.type === "waiting") {
        setStatus("Waiting for " + m.for + "\u2026");
      } else if (m.type === "state") {
        showState(m);
      } else if (m.type === "ended") {
        current = null;
        clear($("actions"));
        $("typed").hidden = true;
        if (m.observation) render(board, m.game, m.observation);
        var r = $("result");
        r.hidden = false;
        r.setAttribute("data-reason", m.reason);
        r.textContent = m.text;
        $("prompt").textContent = "the game is over";
        $("join").hidden = false;
        setStatus("Game over");
      } else if (m.type === "event") {
        setStatus(m.name + (m.event === "away" ? " is away" : " is back"));
      } else if (m.type === "bye") {
        setStatus("Closed: " + m.text);
      }
    }

    function stream() {
      return fetch("api/bot/stream", { headers: auth() }).then(function (response) {
        if (!response.ok) return response.json().then(function (e) { throw new Error(e.text || e.error); });
        var reader = response.body.getReader();
        var decoder = new TextDecoder();
        var buffer = "";
        function pump() {
          return reader.read().then(function (chunk) {
            if (chunk.done) { setStatus("Disconnected"); return; }
            buffer += decoder.decode(chunk.value, { stream: true });
            var lines = buffer.split("\n");
            buffer = lines.pop();
            lines.forEach(function (line) { if (line) message(JSON.parse(line)); });
            return pump();
          });
        }
        pump();
      });
    }

    function signIn() {
      if (who) return Promise.resolve(who);
      var name = $("name").value.trim(), token = $("token").value;
      var got = token ? Promise.resolve({ name: name, token: token }) :
        post("guest", name ? { name: name } : {}).then(function (a) {
          if (a.type !== "ok") throw new Error(a.text);
          return { name: a.name, token: a.token };
        });
      return got.then(function (w) { who = w; $("name").value = w.name; $("name").disabled = $("token").disabled = true;
                                     return stream(); });
    }

    $("game").addEventListener("change", fillOpponents);
    $("typed").addEventListener("submit", function (e) {
      e.preventDefault();
      var text = $("typed-action").value.trim();
      if (text) act(text);
    });
    $("resign").addEventListener("click", function () { post("resign"); });
    $("join").addEventListener("submit", function (e) {
      e.preventDefault();
      signIn().then(function () {
        var value = $("opponent").value, colon = value.indexOf(":");
        var choice = [value.slice(0, colon), value.slice(colon + 1)];  // "engine:solver:2": a level may hold colons
        var request = { game: $("game").value };
        if (choice[0] === "engine") {
          request.opponent = { kind: "engine" };
          if (choice[1]) request.opponent.level = choice[1];
        }
        var table = $("table").value.trim();
        if (table && choice[0] === "person") request.table = table;
        return post("play", request);
      }).catch(function (err) { showError(err.message); });
    });
    fetch("api/bot/games").then(function (r) { return r.json(); }).then(function (g) {
      fillGames(g.games || []);
      setStatus("Ready");
    }, function () { showError("This server offers no games to play here."); });
  }

  var PAGES = { index: pageIndex, game: pageGame, play: pagePlay, replay: pageReplay, ratings: pageRatings,
                player: pagePlayer, tournaments: pageTournaments, tournament: pageTournament };
  /* Learn the games, then draw the page (without them when /api/server cannot be read: the
     pages then show the game types as the API names them). GamedBoard exists from then on. */
  function start() {
    var page = PAGES[document.body.getAttribute("data-page")];
    serverInfo().then(learnGames, function () {}).then(function () {
      window.GamedBoard = { render: render, gameName: gameName, renderers: RENDERERS,
                            boards: BOARDS, moveWords: moveWords, seatLabel: seatLabel };
      if (page) page();
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
