package view

import (
	"html/template"
	"strconv"
)

// maxOlderText is maxOlder, written.
var maxOlderText = strconv.Itoa(maxOlder)

// style is the pages' stylesheet.
const style = `<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:1600px}
.scroll{overflow-x:auto;max-width:100%}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.4em 0}td,th{padding:.2em .6em;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{background:#f5f5f5}td.n{text-align:right;font-variant-numeric:tabular-nums}
.status{padding:0 .4em;border-radius:3px;background:#eee}
.s-converged,.s-early_exit{background:#d7f5d7}.s-escalated{background:#ffe6b3}.s-running{background:#d6e8ff}
.s-failed,.s-aborted,.s-stuck{background:#f8d0d0}
.q{white-space:pre-wrap;background:#fff8e6;border-left:3px solid #e0a800;padding:.4em .6em}
.err{color:#a00}.muted{color:#777}.best{font-weight:bold}
.bar{display:inline-block;height:.7em;background:#7aa7e0;vertical-align:middle}
.charts{display:flex;flex-wrap:wrap;gap:1em}.charts figure{margin:0}
svg.chart{width:420px;height:140px;background:#fafafa;border:1px solid #eee}
svg .axis{stroke:#999}svg .grid{stroke:#eee}svg .series{fill:none;stroke:#2d6fc4;stroke-width:1.5}svg .point{fill:#2d6fc4}
svg .threshold{stroke:#d33;stroke-dasharray:4 3}svg text{font-size:10px;fill:#555}
pre{white-space:pre-wrap;margin:0}details summary{cursor:pointer}
td.tasks{min-width:18em}.task{white-space:nowrap}.task details{white-space:normal}pre.output{max-width:40em;max-height:12em;overflow:auto;background:#f7f7f7;font-size:12px}
@media (max-width:700px){body{margin:.5em}table{display:block;overflow-x:auto;max-width:100%}.charts figure{width:100%}svg.chart{width:100%;height:auto}.q,pre{overflow-wrap:anywhere}td.tasks{min-width:12em}}
</style>`

var listTmpl = template.Must(template.New("list").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>{{.P.Title}}</title>` + style + `</head><body data-fingerprint="{{.P.Fingerprint}}" data-poll="{{.P.Poll}}">
<h1>{{.P.Title}}</h1>
<form id="filters" method="get" action="./">
<label>Status <select name="status"><option value="">any</option>
{{- range .P.Statuses}}<option value="{{.}}"{{if eq . $.P.Status}} selected{{end}}>{{.}}</option>{{end -}}
</select></label>
<label>Text <input type="search" name="q" value="{{.P.Query}}"></label>
{{- if .P.Extras}}
<label>Kind <input type="search" name="kind" value="{{.P.Kind}}" size="10"></label>{{end}}
<label>Saved within <select name="age"><option value="">any time</option>
{{- range $a := .P.Ages}}<option value="{{$a}}"{{if eq $a $.P.Age}} selected{{end}}>{{$a}}</option>{{end -}}
</select></label>
<label>Sort the page by <select name="sort"><option value="">name</option>
{{- range .P.Sorts}}<option value="{{.}}"{{if eq . $.P.Sort}} selected{{end}}>{{.}}</option>{{end -}}
</select></label>
<button type="submit">Filter</button>
</form>
<p class="muted" id="count">{{if .P.Total}}{{len .P.Rows}} of {{.P.Total}} sessions{{else}}{{len .P.Rows}} sessions{{with .P.After}} after {{.}}{{end}}{{if .P.Next}}, and more{{end}}{{end}}
{{- with .P.First}} · <a href="{{.}}">first page</a>{{end}}{{with .P.Next}} · <a id="next" href="{{.}}">next page →</a>{{end}}</p>
{{range .P.Errors}}<p class="err">{{.}}</p>{{end}}
{{- if .P.Searched}}<p class="muted" id="searched">The filter read {{.P.MaxScan}} sessions, up to {{.P.SearchedTo}}, without filling the page: the next page reads on.</p>{{end}}
<table id="sessions">
<thead><tr><th>Session</th><th>Status</th><th>Iteration</th><th>Tokens</th><th>Cost</th><th>Age</th>{{if .P.Extras}}<th>Kind</th><th>Holder</th>{{end}}<th>Open question</th><th>Lineage</th></tr></thead>
<tbody>
{{- range $r := .P.Rows}}
<tr data-session="{{.Name}}"><td><a href="{{.Link}}">{{.Name}}</a>{{if .Err}}<div class="err">{{.Err}}</div>{{end}}</td>
<td><span class="status s-{{.Status}}">{{.Status}}</span>{{if eq .Holding "unheld"}} <span class="err unheld">{{if $.P.Extras}}no worker holds it{{else}}no process holds it (killed or crashed){{end}}</span>{{end}}{{if .Skipped}} <span class="err damaged">damaged: generation {{range $i, $g := .Skipped}}{{if $i}}, {{end}}{{$g}}{{end}} does not read; shown: {{.Generation}}</span>{{end}}{{with .Extended}} <span class="muted extended">extended{{with $r.ExtendedTo}} to {{.}}{{end}}{{with .By}} by {{.}}{{end}}, {{with $r.Holder}}resumed by {{.}}{{else}}waiting to be resumed{{end}}</span>{{else}}{{if .Answered}} <span class="muted">answered, {{if .Holder}}resumed by {{.Holder}}{{else}}waiting for a worker{{end}}</span>{{end}}{{end}}{{if .Reason}}<div class="muted">{{.Reason}}</div>{{end}}</td>
<td class="n">{{.Iteration}}</td><td class="n tokens"{{with .UsageErr}} title="{{.}}"{{end}}>{{if .UsageErr}}—{{else}}{{.Tokens}}{{end}}</td><td class="n cost">{{if .UsageErr}}—{{else}}{{.Cost}}{{end}}</td><td title="{{.Saved}}">{{.Age}}</td>{{if $.P.Extras}}<td>{{.Kind}}</td><td>{{.Holder}}</td>{{end}}
<td>{{if .Question}}<div class="q">{{.Question}}</div>{{end}}</td>
<td>{{if .Origin}}forked from <a href="{{.OriginLink}}">{{.Origin.Session}}</a> at generation {{.Origin.Generation}}{{end}}
</td></tr>
{{- else}}
<tr><td colspan="9" class="muted">no sessions{{if or .P.Status .P.Query}} match{{end}}</td></tr>
{{- end}}
</tbody></table>
<p class="muted" id="refresh">This page follows the store: it reloads when its rows change.</p>
<script nonce="{{.Nonce}}">
(function(){
  var b=document.body, fp=b.dataset.fingerprint, poll=+b.dataset.poll, url="live"+location.search,
      note=document.getElementById("refresh");
  function tick(){
    if(document.hidden){setTimeout(tick,poll);return}
    fetch(url,{cache:"no-store"}).then(function(r){return r.ok?r.json():null}).then(function(j){
      if(j&&j.fingerprint!==fp){
        var a=document.activeElement;
        if(a&&a.form){note.textContent="The rows changed: the page reloads when you leave the filter.";setTimeout(tick,poll);return}
        location.reload();return}
      setTimeout(tick,poll);
    },function(){note.textContent="The store did not answer: retrying.";setTimeout(tick,poll)});
  }
  setTimeout(tick,poll);
})();
</script>
</body></html>
`))

var sessionTmpl = template.Must(template.New("session").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>{{.P.C.Session}} · {{.P.Title}}</title>` + style + `</head>
<body data-generation="{{.P.LiveGeneration}}" data-holding="{{.P.Holding}}" data-poll="{{.P.Poll}}">
<p><a href="../">← all sessions</a></p>
<h1>{{.P.C.Session}}</h1>
{{- if .P.Err}}<p class="err">{{.P.Err}}</p>{{end}}
{{- if .P.C.Skipped}}<p id="damaged" class="err warn">Damaged: generation{{if gt (len .P.C.Skipped) 1}}s{{end}} {{range $i, $g := .P.C.Skipped}}{{if $i}}, {{end}}{{$g}}{{end}} of this session do{{if eq (len .P.C.Skipped) 1}}es{{end}} not read; this page shows generation {{.P.C.Generation}}, the newest that reads.</p>{{end}}
<table id="summary">
<tr><th>Status</th><td><span class="status s-{{.P.C.Status}}">{{.P.C.Status}}</span> {{.P.C.Reason}} <span id="live" class="muted">
{{- if eq .P.C.Status "running"}}{{if eq .P.Holding "held"}}(live{{with .P.Extra.Holder}}: held by {{.}}{{end}}){{else if eq .P.Holding "unheld"}}<span class="err">({{if .P.Extras}}no worker holds it now: waiting for one{{else}}no process holds it: the loop stopped without saving its end (killed or crashed); resuming it goes on{{end}})</span>{{else}}(running: the page follows it){{end}}
{{- else if eq .P.C.Status "escalated"}}{{if .P.Extension}}(extended: {{with .P.Extra.Holder}}resumed by {{.}}{{else}}waiting to be resumed{{end}}){{else if not .P.Extra.Answered}}(waiting for an answer){{end}}
{{- else if eq .P.C.Status "interrupted"}}(interrupted: resuming it goes on)
{{- else if .P.Extension}}(extended: {{with .P.Extra.Holder}}resumed by {{.}}{{else}}waiting to be resumed{{end}})
{{- end}}</span></td></tr>
{{- with .P.Extension}}<tr id="extended"><th>Extension</th><td>Extended{{with $.P.ExtensionTo}} to {{.}}{{end}}{{with .By}} by {{.}}{{end}}{{if not .At.IsZero}} at {{.At.UTC.Format "2006-01-02 15:04:05 UTC"}}{{end}}: {{with $.P.Extra.Holder}}{{.}} resumes the session{{else}}the session waits to be resumed{{end}} under the raised limits.</td></tr>{{end}}
{{- with .P.ExtensionErr}}<tr><th>Extension</th><td class="err">{{.}}</td></tr>{{end}}
{{- if .P.ExtrasErr}}<tr><th>Host</th><td class="err">{{.P.ExtrasErr}}</td></tr>{{end}}
{{- with .P.Extra}}{{if .Kind}}<tr><th>Kind</th><td>{{.Kind}}</td></tr>{{end}}{{if .Holder}}<tr><th>Holder</th><td>{{.Holder}}</td></tr>{{end}}{{end}}
{{- range .P.Links}}<tr class="link"><th>{{.Label}}</th><td><a href="{{.URL}}">{{.Text}}</a></td></tr>{{end}}
<tr><th>Iterations</th><td>{{.P.C.Iteration}} ({{.P.TotalTasks}} tasks, {{.P.TotalFail}} failed)</td></tr>
<tr><th>Generation</th><td>{{.P.C.Generation}}, saved {{.P.Saved}}{{if .P.C.Skipped}} <span class="err">(newer generations damaged and skipped: {{range $i, $g := .P.C.Skipped}}{{if $i}}, {{end}}{{$g}}{{end}})</span>{{end}}</td></tr>
<tr><th>Started</th><td>{{.P.Started}}; last iteration ended {{.P.Last}}; {{.P.Elapsed}} in iterations</td></tr>
{{- if .P.HasBest}}<tr><th>Best iteration</th><td id="best">{{.P.BestIteration}}{{with .P.BestBy}} <span class="muted">(by {{.}})</span>{{end}}{{if .P.C.BestGeneration}} (state kept in generation {{.P.C.BestGeneration}}){{end}}</td></tr>{{end}}
{{- if .P.OriginLink}}<tr><th>Forked from</th><td><a href="{{.P.OriginLink}}">{{.P.C.Origin.Session}}</a> at generation {{.P.C.Origin.Generation}}</td></tr>{{end}}
<tr><th>Forks</th><td><a id="forks" href="{{.P.ForksLink}}">list the sessions forked from this one</a></td></tr>
<tr><th>Decision</th><td id="decision">{{.P.Verdict}}{{with .P.Reason}}: {{.}}{{end}}{{if .P.StoppedBy}} <span class="muted">(the loop's status: its last convergence check said continue)</span>{{end}}
{{- if .P.Unmet}}<div>unmet:<ul id="unmet">{{range .P.Unmet}}<li>{{.}}</li>{{end}}</ul></div>{{end}}</td></tr>
</table>
{{- if .P.Question}}
<h2>Escalation</h2>
<div id="question" class="q">{{.P.Question}}</div>
{{- with .P.Esc}}
{{- if .Reason}}<p>Why: {{.Reason}}</p>{{end}}
{{- if .Pattern}}<p>Pattern: {{.Pattern}}</p>{{end}}
{{- if .Attempts}}<ul>{{range .Attempts}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{- end}}
{{- if .P.Extra.Answered}}<p id="answered" class="muted">Answered: {{with .P.Extra.Holder}}resumed by {{.}}.{{else}}the session waits for a worker to resume it.{{end}}</p>{{end}}
{{- if .P.Answer}}
<form id="answer" method="post" action="{{.P.AnswerLink}}">
<input type="hidden" name="token" value="{{.P.Token}}"><input type="hidden" name="generation" value="{{.P.C.Generation}}">
{{- if .P.Parked}}<p id="plain-answer" class="muted">The session is parked at its budget: a plain answer stops it there (budget_exhausted){{if .P.Extend}}; to go on, raise its budget below{{end}}.</p>{{end}}
<p><label for="answer-text">Your answer</label><br><textarea id="answer-text" name="answer" rows="4" cols="80" required></textarea></p>
<p><button type="submit">Answer</button></p>
</form>
{{- end}}
{{- end}}
{{- if .P.QA}}
<h2>Questions and answers</h2>
<table id="answers"><thead><tr><th>Generation</th><th>Iteration</th><th>Question</th><th>Accepted answer</th><th>By</th><th>When</th></tr></thead><tbody>
{{- range .P.QA}}<tr data-generation="{{.Generation}}"><td class="n">{{.Generation}}</td><td class="n">{{if ge .Iteration 0}}{{.Iteration}}{{end}}</td><td><div class="q">{{.Question}}</div></td>
{{- with .Answer}}<td class="answer"><pre>{{.Answer}}</pre></td><td>{{if .By}}{{.By}}{{else}}<span class="muted">not recorded</span>{{end}}</td><td>{{if not .At.IsZero}}{{.At.UTC.Format "2006-01-02 15:04:05 UTC"}}{{end}}</td>
{{- else}}<td colspan="3" class="muted">{{if .Open}}open: not answered yet{{else}}answered; the answer is not recorded by the host{{end}}</td>{{end}}</tr>{{end}}
</tbody></table>
{{- end}}
{{- if .P.Extensions}}
<h2>Budget extensions</h2>
<table id="extensions"><thead><tr><th>After iteration</th><th>From</th><th>To</th><th>By</th><th>When</th></tr></thead><tbody>
{{- range .P.Extensions}}<tr><td class="n">{{.Iteration}}</td><td>{{.From}}</td><td>{{.To}}</td><td>{{if .By}}{{.By}}{{else}}<span class="muted">not recorded</span>{{end}}</td><td>{{.At}}</td></tr>{{end}}
</tbody></table>
{{- end}}
<h2>Budget</h2>
<table id="budget"><thead><tr><th>Resource</th><th>Used</th><th>Limit</th><th>Share</th></tr></thead><tbody>
{{- range .P.Budget}}<tr><td>{{.Resource}}</td><td class="n">{{.Used}}</td><td class="n">{{.Limit}}</td><td class="n{{if .Over}} err{{end}}">{{.Share}}</td></tr>{{end}}
</tbody></table>
<h2>Charts</h2>
<div class="charts">{{range .P.Charts}}<figure><figcaption>{{.Label}}{{if .HasLine}} <span class="muted">(threshold {{.Threshold}})</span>{{end}}</figcaption>{{.SVG}}</figure>{{end}}</div>
<h2>Timeline</h2>
{{- if gt .P.Dropped 0}}<p id="dropped" class="muted">{{if .P.NotLoaded}}Iterations before {{.P.Dropped}} are not shown: older kept generations hold them, and this page reads at most ` + maxOlderText + ` of them.{{else}}Iterations before {{.P.Dropped}} are not kept: no kept generation holds them.{{end}}</p>{{end}}
<div class="scroll"><table id="timeline"><thead><tr><th>Iteration</th><th>Action</th><th>Gaps</th><th>By kind</th><th>P1/P2/P3</th><th>Tokens</th><th>Cost</th><th>Calls</th><th>Duration</th><th>Decision</th><th>Tasks (failed)</th><th>Summary</th></tr></thead><tbody>
{{- range .P.Iterations}}
<tr data-iteration="{{.Iteration}}"{{if .Best}} class="best" title="best iteration"{{end}}><td class="n">{{.Iteration}}{{if .Best}} ★{{end}}</td>
<td>{{if eq .Iteration 0}}<span class="muted">initial state</span>{{else}}{{.Action}}{{if .Failed}} <span class="err">failed</span>{{end}}{{end}}</td>
{{if .Pending}}<td colspan="3" class="muted pending">not yet assessed</td>{{else}}<td class="n">{{.Gaps}}</td><td>{{.Kinds}}</td><td class="n">{{.P1}}/{{.P2}}/{{.P3}}</td>{{end}}
<td class="n">{{if .Tokens}}{{.Tokens}}{{end}}{{if .TokenShare}} <span class="bar" style="width:{{.TokenWidth}}px"></span> <span class="muted">{{.TokenShare}} of the limit</span>{{end}}</td>
<td class="n">{{.Cost}}</td><td class="n">{{if .Calls}}{{.Calls}}{{end}}</td><td class="n">{{.Duration}}</td>
<td class="decision">{{if .Pending}}<span class="muted">pending</span>{{else if .Verdict}}<b>{{.Verdict}}</b>{{else}}<span class="muted">continue</span>{{end}}{{if .Unmet}}<div class="muted">unmet: {{range $i, $u := .Unmet}}{{if $i}}; {{end}}{{$u}}{{end}}</div>{{end}}</td>
<td class="tasks">{{if .Iteration}}{{.Tasks}} ({{.FailedTask}}){{end}}
{{- range .Runs}}<div class="task{{if .Err}} err{{end}}" data-role="{{.Role}}">{{if .Role}}{{.Role}}{{else}}task{{end}}{{with .Gap}} <span class="muted">[{{.}}]</span>{{end}}: {{if .Err}}failed: {{.Err}}{{else}}ok{{end}}{{with .Duration}} · {{.}}{{end}}{{with .Tokens}} · {{.}} tokens{{end}}
{{- with .Output}}<details><summary>output</summary><pre class="output">{{.}}</pre></details>{{end}}</div>{{end}}</td>
<td>{{if .Summary}}<div class="muted">{{.Summary}}</div>{{end}}</td></tr>
{{- end}}
</tbody></table></div>
{{- if or .P.Generations .P.GenerationsErr}}
<h2>Kept generations</h2>
{{- if .P.GenerationsErr}}<p class="err">{{.P.GenerationsErr}}</p>{{end}}
<table id="generations"><thead><tr><th>Generation</th><th>Status</th><th>Iteration</th><th>Saved</th></tr></thead><tbody>
{{- range .P.Generations}}<tr><td class="n">{{.Generation}}{{if eq .Generation $.P.C.BestGeneration}} ★ best{{end}}</td><td>{{.Status}}</td><td class="n">{{.Iteration}}</td><td>{{.Time.UTC.Format "2006-01-02 15:04:05"}}</td></tr>{{end}}
</tbody></table>
{{- end}}
{{- if .P.Extend}}
<form id="extend" method="post" action="{{.P.ExtendLink}}"><input type="hidden" name="token" value="{{.P.ExtendToken}}"><input type="hidden" name="generation" value="{{.P.C.Generation}}">
<p>Resume with a raised budget (0: no limit; the host resumes the session):
<label>tokens <input name="tokens" inputmode="numeric" value="{{.P.R.Limits.Tokens}}" size="10"></label>
<label>cost <input name="cost" inputmode="decimal" value="{{.P.R.Limits.Cost}}" size="8"></label>
<label>calls <input name="calls" inputmode="numeric" value="{{.P.R.Limits.Calls}}" size="8"></label>
<label>time <input name="wall" value="{{.P.Wall}}" size="8"></label>
<button type="submit">Request the extension</button></p>
</form>
{{- end}}
{{- if .P.Fork}}
<form id="fork" method="post" action="{{.P.ForkLink}}"><input type="hidden" name="token" value="{{.P.ForkToken}}">
<p>Fork from generation <input name="generation" inputmode="numeric" value="{{.P.C.Generation}}" size="6">
as the new session <input name="to" required size="20"> (the host runs it)
<button type="submit">Request the fork</button></p>
</form>
{{- end}}
{{- if .P.Cancel}}
<form id="cancel" method="post" action="{{.P.CancelLink}}"><input type="hidden" name="token" value="{{.P.CancelToken}}">
<p><button type="submit">Cancel this session for good</button></p>
</form>
{{- end}}
<h2>Settings</h2>
<table id="settings"><tbody>
{{- range .P.Settings}}<tr><th>{{.Name}}</th><td>{{if .Detail}}<details><summary>{{.Value}}</summary><pre>{{.Detail}}</pre></details>{{else}}{{.Value}}{{end}}</td></tr>{{end}}
</tbody></table>
{{- if .Nonce}}
<script nonce="{{.Nonce}}">
(function(){
  var b=document.body, gen=b.dataset.generation, poll=+b.dataset.poll, url=location.pathname.replace(/\/+$/,"")+"/live";
  function tick(){
    fetch(url,{cache:"no-store"}).then(function(r){
      if(r.status===404){var l=document.getElementById("live");if(l){l.className="err";l.textContent="(removed from the store: no longer followed)"}throw "gone"}
      return r.ok?r.json():null}).then(function(j){
      if(j&&(String(j.generation)!==gen||(j.holding||"")!==b.dataset.holding)){location.reload();return}
      setTimeout(tick,poll);
    },function(e){if(e!=="gone")setTimeout(tick,poll)});
  }
  setTimeout(tick,poll);
})();
</script>
{{- end}}
</body></html>
`))

var forksTmpl = template.Must(template.New("forks").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>forks of {{.P.Session}} · {{.P.Title}}</title>` + style + `</head><body>
<p><a href="{{.P.Back}}">← {{.P.Session}}</a></p>
<h1>Forks of {{.P.Session}}</h1>
{{range .P.Errors}}<p class="err">{{.}}</p>{{end}}
<ul id="forks">{{range .P.Forks}}<li><a href="{{.Link}}">{{.Name}}</a> (from generation {{.Generation}})</li>{{else}}<li class="muted">no session is forked from this one</li>{{end}}</ul>
</body></html>
`))
