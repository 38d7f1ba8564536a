package timeline

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/verify"
)

// WriteHTML writes the page: a header that makes it evidence (ledger,
// seq range, head hash, verify's result), the picture, a details panel,
// and the same events as text tables. Everything is inline.
func WriteHTML(w io.Writer, p *Page) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	l := newLayout(p)
	bw.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n")
	// Nothing may be fetched: no network, no inline frames, no forms.
	bw.WriteString(`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">` + "\n")
	fmt.Fprintf(bw, "<title>lockledger timeline: %s</title>\n", esc(filterText(p)))
	bw.WriteString("<style>" + pageCSS + "</style></head><body>\n")
	writeHeader(bw, p, l)
	bw.WriteString(`<div id="picture">` + "\n")
	if len(p.Events) > OverviewAbove {
		writeOverview(bw, l)
	}
	writeSVG(bw, l, false)
	bw.WriteString("</div>\n")
	bw.WriteString(`<aside id="details" aria-live="polite"><h2>Details</h2><p id="details-hint">Point at or click a bar or a marker (or tab to it) to see its event here; page.html#seq=N opens with event N shown.</p><dl id="details-body"></dl></aside>` + "\n")
	writeHoldingsTable(bw, p, l)
	writeEventsTable(bw, p)
	bw.WriteString("<script>" + pageJS + "\n" + zoomJS + "</script>\n</body></html>\n")
	return bw.Flush()
}

func writeHeader(w *bufio.Writer, p *Page, l *layout) {
	w.WriteString("<header><h1>lockledger timeline</h1><dl class=\"facts\">\n")
	fact := func(k, v string) { fmt.Fprintf(w, "<dt>%s</dt><dd>%s</dd>\n", k, v) }
	fact("Command", "<code>"+esc(filterText(p))+"</code>")
	fact("Generated", esc(fmtTime(p.Generated))+" (UTC)")
	fact("Window", esc(fmtTime(l.start))+" to "+esc(fmtTime(l.end))+" (UTC)")
	shown := plural(len(p.Events), "event", "events")
	if n := len(p.Events); n > 0 {
		shown += fmt.Sprintf(" (seq %d-%d)", p.Events[0].Seq, p.Events[n-1].Seq)
	}
	fact("Shown", esc(fmt.Sprintf("%s, %s on %s", shown, plural(len(p.Holdings), "holding", "holdings"), plural(len(l.lanes), "lock", "locks"))))
	if r := p.Verify; r != nil {
		if r.LedgerID != "" {
			fact("Ledger id", "<code>"+esc(r.LedgerID)+"</code>")
		}
		if r.Events > 0 {
			fact("Ledger", esc(fmt.Sprintf("%s, seq %d-%d", plural(int(r.Events), "event", "events"), r.FirstSeq, r.LastSeq)))
			fact("Head hash", "<code>"+esc(r.HeadHash)+"</code>")
		}
		fact("Verify", verifyText(r))
		fact("Checkpoint", checkpointText(r))
	} else {
		fact("Verify", "not run")
	}
	w.WriteString("</dl>\n")
	if l.aggregate || l.aggMarkers {
		fmt.Fprintf(w, `<p class="note" id="aggregated">This window holds %s and %s: above %d, each lane is drawn per pixel column (a bar's data-count says how many it stands for, its details are the first one's). Narrow the window (--since, --until, --lock) to see each one.</p>`+"\n",
			plural(len(p.Holdings), "holding", "holdings"), plural(len(l.markers), "marker", "markers"), AggregateAbove)
	}
	w.WriteString("</header>\n")
}

// verifyText is verify's verdict at generation time, in words.
func verifyText(r *verify.Report) string {
	if r.OK {
		return `<span class="ok">OK</span>: the chain, schemas, locks table and lock files hold`
	}
	s := fmt.Sprintf(`<span class="bad">FAILED</span> (%s)`, plural(r.ProblemCount, "problem", "problems"))
	if fb := r.FirstBad; fb != nil {
		s += esc(fmt.Sprintf(": first %s at seq %d: %s", fb.Kind, fb.Seq, fb.Detail))
	}
	return s + "; run lockledger verify"
}

// checkpointText names the largest checkpoint verify met and its result.
func checkpointText(r *verify.Report) string {
	if len(r.Checkpoints) == 0 {
		return "none stored; " + esc(r.Trust)
	}
	c := slices.MaxFunc(r.Checkpoints, func(a, b *verify.CheckpointResult) int { return cmp.Compare(a.Size, b.Size) })
	s := fmt.Sprintf("%s: %d events", c.Source, c.Size)
	if !c.Time.IsZero() {
		s += ", signed " + fmtTime(c.Time)
	}
	s += ", " + c.Result
	if c.Result == "not checked" {
		s += " (lockledger verify --verifier-key KEY checks its signature)"
	}
	return esc(s)
}

func writeHoldingsTable(w *bufio.Writer, p *Page, l *layout) {
	fmt.Fprintf(w, "<section><h2>Holdings (%d)</h2>\n", len(p.Holdings))
	w.WriteString(`<p>A holding's opening event (same seq) is in the events table below.</p>` + "\n")
	w.WriteString(`<table id="holdings"><thead><tr><th>Seq<th>Lock<th>Actor<th>Request<th>From (UTC)<th>To (UTC)<th>Ended by</tr></thead><tbody>` + "\n")
	for i, h := range p.Holdings {
		if i == TableLimit {
			break
		}
		o := h.Opened
		end, ended := "held at the window's end", "-"
		if h.Ended != nil {
			if _, open := l.holdingEnd(h); !open {
				end = fmtTime(h.Ended.Time)
				ended = fmt.Sprintf("seq %d %s by %s", h.Ended.Seq, h.Ended.Type, h.Ended.Actor)
			}
		}
		fmt.Fprintf(w, "<tr id=h%d><td>%d<td>%s<td>%s<td>%s<td>%s<td>%s<td>%s\n",
			o.Seq, o.Seq, esc(o.LockName), esc(o.Actor), esc(o.RequestID), fmtTime(o.Time), esc(end), esc(ended))
	}
	w.WriteString("</tbody></table>\n")
	tableCut(w, len(p.Holdings), "holdings")
	w.WriteString("</section>\n")
}

// earlier is the opening events of holdings drawn that the query did not
// select (begun before the window, or outside --type): their own table,
// so that every bar's event is on the page.
func earlier(p *Page) []*replay.Event {
	in := make(map[int64]bool, len(p.Events))
	for _, ev := range p.Events {
		in[ev.Seq] = true
	}
	var out []*replay.Event
	for i, h := range p.Holdings {
		if i < TableLimit && !in[h.Opened.Seq] {
			out = append(out, h.Opened)
		}
	}
	return out
}

func writeEventsTable(w *bufio.Writer, p *Page) {
	if ev := earlier(p); len(ev) > 0 {
		fmt.Fprintf(w, "<section><h2>Opening events of holdings drawn, outside the selection (%d)</h2>\n", len(ev))
		writeEventRows(w, p, "earlier", ev)
		w.WriteString("</section>\n")
	}
	fmt.Fprintf(w, "<section><h2>Events (%d)</h2>\n", len(p.Events))
	writeEventRows(w, p, "events", p.Events)
	tableCut(w, len(p.Events), "events")
	w.WriteString("</section>\n")
}

func writeEventRows(w *bufio.Writer, p *Page, id string, evs []*replay.Event) {
	fmt.Fprintf(w, `<table id="%s"><thead><tr><th>Seq<th>Time (UTC)<th>Event<th>Lock<th>Actor<th>OS user<th>PID@host<th>Request<th>Details<th>Hash</tr></thead><tbody>`+"\n", id)
	for i, ev := range evs {
		if i == TableLimit {
			break
		}
		lock := ev.LockName
		if ev.Type.LedgerWide() {
			lock = "(ledger)"
		}
		osUser := "-"
		if p.OSUser != nil {
			osUser = p.OSUser(ev)
		}
		fmt.Fprintf(w, "<tr id=e%d><td>%d<td>%s<td>%s<td>%s<td>%s<td>%s<td>%s<td>%s<td>%s<td>%s\n",
			ev.Seq, ev.Seq, fmtTime(ev.Time), ev.Type, esc(lock), esc(ev.Actor), esc(osUser), esc(pidAt(ev)),
			esc(ev.RequestID), esc(describe(p, ev)), esc(ev.Hash))
	}
	w.WriteString("</tbody></table>\n")
}

func tableCut(w *bufio.Writer, n int, what string) {
	if n > TableLimit {
		fmt.Fprintf(w, `<p class="note">The first %d of %s %s are listed; lockledger timeline --format csv lists them all.</p>`+"\n",
			TableLimit, strconv.Itoa(n), what)
	}
}

func describe(p *Page, ev *replay.Event) string {
	if p.Describe == nil {
		return ""
	}
	return p.Describe(ev)
}

var pageCSS = strings.TrimSpace(`
body{font:14px/1.4 system-ui,sans-serif;margin:16px;color:#111;background:#fff}
h1{font-size:20px;margin:0 0 8px}h2{font-size:16px;margin:16px 0 6px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0}
dl.facts dt{font-weight:bold}dl.facts dd{margin:0;overflow-wrap:anywhere}
code{font:12px ui-monospace,monospace}
.ok{color:#006400;font-weight:bold}.bad{color:#b00;font-weight:bold}
.note{background:#fff4d6;border-left:4px solid #E69F00;padding:4px 8px}
#picture{overflow-x:auto}#picture svg{max-width:100%;height:auto}
#details{position:sticky;bottom:0;background:#f8f8f8;border:1px solid #999;padding:4px 12px;max-height:40vh;overflow:auto}
#details h2{margin:4px 0}
#details-body{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:4px 0}
#details-body dt{font-weight:bold}#details-body dd{margin:0;overflow-wrap:anywhere;hyphens:none}
#details-body .w{white-space:nowrap}#details-hint.selected{font-weight:bold}
tr.sel td{background:#ffe58a}
#timeline .label{pointer-events:none}
table{border-collapse:collapse;font-size:12px;width:100%}
th,td{border:1px solid #ccc;padding:2px 4px;text-align:left;vertical-align:top}
td:last-child{font:11px ui-monospace,monospace;word-break:break-all}
thead th{background:#eee;position:sticky;top:0}
@page{size:A4 landscape;margin:10mm}
@media print{body{margin:0;font-size:10px}#details{display:none}#picture{overflow:visible}
#picture svg{width:100%;height:auto}table{font-size:7pt}thead{display:table-header-group}
tr{break-inside:avoid}thead th{position:static}section{break-before:auto}}
`)

// pageJS fills the details panel from the tables' rows, so that each
// event's text is on the page once. A link to page.html#seq=N opens with
// that bar or marker shown.
var pageJS = strings.TrimSpace(`
(function(){
var body=document.getElementById('details-body'),hint=document.getElementById('details-hint'),cur=null;
function add(k,v){var dt=document.createElement('dt');dt.textContent=k;var dd=document.createElement('dd');
 v.split(/(\s+)/).forEach(function(p){if(!p)return;if(/^\s/.test(p)||p.length>30){dd.appendChild(document.createTextNode(p));return;}
  var w=document.createElement('span');w.className='w';w.textContent=p;dd.appendChild(w);});
 body.appendChild(dt);body.appendChild(dd);}
function rows(r,skip){if(!r)return;var hs=r.closest('table').querySelectorAll('thead th');
 for(var i=0;i<r.cells.length;i++){var k=hs[i]?hs[i].textContent:'';if(skip.indexOf(k)<0)add(k,r.cells[i].textContent);}}
var svg=document.getElementById('timeline'),box=document.getElementById('selbox'),marked=[];
function ring(el){var b=el.getBBox(),m=svg.getScreenCTM().inverse().multiply(el.getScreenCTM());
 var p=new DOMPoint(b.x,b.y).matrixTransform(m),q=new DOMPoint(b.x+b.width,b.y+b.height).matrixTransform(m);
 var x=Math.min(p.x,q.x)-3,y=Math.min(p.y,q.y)-3,w=Math.abs(q.x-p.x)+6,h=Math.abs(q.y-p.y)+6;
 for(var r of box.children){r.setAttribute('x',x);r.setAttribute('y',y);r.setAttribute('width',w);r.setAttribute('height',h);}
 box.removeAttribute('display');}
function bar(el){var s=el.getAttribute('data-seq');
 if(el.classList.contains('stale')||el.classList.contains('label')||el.classList.contains('waited'))return svg.querySelector('rect.b[data-seq="'+s+'"]')||el;
 return el;}
function show(el){el=bar(el);var s=el.getAttribute('data-seq');if(cur)cur.classList.remove('sel');cur=el;el.classList.add('sel');ring(el);
 marked.forEach(function(r){r.classList.remove('sel');});marked=[];
 ['h','e'].forEach(function(p){var r=document.getElementById(p+s);if(r){r.classList.add('sel');marked.push(r);}});
 body.textContent='';hint.textContent='Selected: seq '+s;hint.className='selected';
 if(el.getAttribute('data-count'))add('Stands for',el.getAttribute('data-count')+' (this is the first)');
 var h=(el.classList.contains('b')||el.classList.contains('agg'))&&document.getElementById('h'+s),e=document.getElementById('e'+s);
 if(h)rows(h,[]);rows(e,h?['Seq','Lock','Actor','Request']:[]);
 if(!h&&!e){add('Seq',s);add('Note','its event is past the tables\' limit');}}
function pick(e){var el=e.target.closest&&e.target.closest('[data-seq]');if(el&&el.closest('svg'))show(el);}
svg.addEventListener('click',pick);svg.addEventListener('mouseover',pick);svg.addEventListener('focusin',pick);
var m=/^#seq=(\d+)$/.exec(location.hash);if(m){var q='[data-seq="'+m[1]+'"]',el=svg.querySelector('.mk'+q)||svg.querySelector(q);if(el)show(el);}
})();
`)

// zoomJS zooms the picture on the stretch dragged across the overview
// (a double click shows the whole window again): each mark moves to its
// time (data-t, data-u: milliseconds from the window's start), markers
// that would overlap in a row are pushed apart and pinned to their
// instants, the axis is ticked again, and the words are placed again as
// the server placed them, measured this time: callouts in their lane's
// rows from the right, names inside their bars clear of markers or else
// in the rows under them; what finds no room is hidden.
var zoomJS = strings.TrimSpace(`
(function(){
var ov=document.getElementById('overview'),svg=document.getElementById('timeline');if(!ov)return;
var span=+svg.dataset.span,X0=+svg.dataset.x0,X1=+svg.dataset.x1,W=svg.viewBox.baseVal.width,start=+svg.dataset.start;
var brush=document.getElementById('brush'),a=0,b=span,from=null,GAP=+svg.dataset.gap,NAMEDY=+svg.dataset.namedy;
function X(t){return X0+Math.min(Math.max((t-a)/(b-a),0),1)*(X1-X0);}
function ovX(e){var p=new DOMPoint(e.clientX,e.clientY).matrixTransform(ov.getScreenCTM().inverse());return Math.min(Math.max(p.x,X0),X1);}
function tOf(x){return (x-X0)/(X1-X0)*span;}
function vis(el,on){if(on)el.removeAttribute('display');else el.setAttribute('display','none');}
function at(el,k,v){el.setAttribute(k,v);}
function hit(p,q){return p.left<q.right&&q.left<p.right&&p.top<q.bottom&&q.top<p.bottom;}
function ticks(){var g=svg.querySelector('.axis .ticks'),bottom=svg.querySelector('.axis').dataset.bottom,ns=svg.namespaceURI;g.textContent='';
 var steps=[10,20,50,100,200,500,1e3,2e3,5e3,1e4,15e3,3e4,6e4,12e4,3e5,6e5,9e5,18e5,36e5,72e5,108e5,216e5,432e5,864e5,1728e5,6048e5],s=steps[steps.length-1];
 for(var i=0;i<steps.length;i++)if((b-a)/steps[i]<=8){s=steps[i];break;}
 for(var t=Math.ceil((start+a)/s)*s;t<=start+b;t+=s){var x=X(t-start),l=document.createElementNS(ns,'line'),tx=document.createElementNS(ns,'text');
  at(l,'x1',x);at(l,'x2',x);at(l,'y1',30);at(l,'y2',bottom);at(l,'stroke','#ddd');g.appendChild(l);
  var iso=new Date(t).toISOString();tx.textContent=s<1e3?iso.slice(11,23):s<6e4?iso.slice(11,19):s<864e5?iso.slice(11,16):iso.slice(5,10);
  at(tx,'x',x);at(tx,'y',22);at(tx,'text-anchor','middle');g.appendChild(tx);}}
function box(el){var b=el.getBBox(),m=el.transform&&el.transform.baseVal.consolidate(),e=m?m.matrix.e:0,f=m?m.matrix.f:0;
 return {left:b.x+e,right:b.x+b.width+e,top:b.y+f,bottom:b.y+b.height+f};}
function free(list,p,q){return list.every(function(s){return p>=s[1]||s[0]>=q;});}
var bars={},leaders={},pins={};
svg.querySelectorAll('rect.b').forEach(function(e){bars[e.dataset.seq]=e;});
svg.querySelectorAll('line.nleader').forEach(function(e){leaders[e.dataset.seq]=e;});
svg.querySelectorAll('line.pin').forEach(function(e){pins[e.dataset.seq]=e;});
function line(cls,s,before){var l=document.createElementNS(svg.namespaceURI,'line');l.setAttribute('class',cls);l.dataset.seq=s;at(l,'stroke',cls==='pin'?'#000':'#555');before.parentNode.insertBefore(l,before);return l;}
function nudge(){var rows={};for(var s in pins)vis(pins[s],false);
 svg.querySelectorAll('path.mk[data-t]').forEach(function(m){if(!m.hasAttribute('display'))(rows[m.dataset.y]=rows[m.dataset.y]||[]).push(m);});
 for(var y in rows){var last=-1e9;rows[y].sort(function(p,q){return p.dataset.t-q.dataset.t;}).forEach(function(m){var t=X(+m.dataset.t),x=Math.max(t,last+GAP),s=m.dataset.seq;last=x;
  at(m,'transform','translate('+x+' '+y+')');if(x-t<0.5)return;var pin=pins[s]||(pins[s]=line('pin',s,m));
  at(pin,'x1',t);at(pin,'x2',x);at(pin,'y1',+y+11);at(pin,'y2',+y+7);vis(pin,true);});}}
function laneOf(y){var ls=svg.querySelectorAll('.lane > rect');for(var i=0;i<ls.length;i++)if(y<+ls[i].getAttribute('y')+ +ls[i].getAttribute('height'))return i;return ls.length-1;}
function place(){var marks=[].filter.call(svg.querySelectorAll('.mk'),function(m){return !m.hasAttribute('display');}).map(box);
 var kept=[],lanes=svg.querySelectorAll('.lane');
 function clear(r){return !marks.some(function(m){return hit(r,m);})&&!kept.some(function(k){return hit(r,k);});}
 var anns=[].filter.call(svg.querySelectorAll('g.ann'),function(g){return !g.hasAttribute('display');});
 anns.sort(function(p,q){return q.dataset.t-p.dataset.t;});var rows={};
 anns.forEach(function(g){var lane=g.dataset.lane,ys=lanes[lane].dataset.rows.split(' ').map(Number),used=+lanes[lane].dataset.used,txt=g.querySelector('text'),ln=g.querySelector('line');
  var rs=rows[lane]||(rows[lane]=ys.map(function(){return [];})),ax=X(+g.dataset.t),w=txt.getComputedTextLength(),x=Math.max(Math.min(ax-6,W-6-w),X0);
  for(var r=0;r<used;r++){var ok=free(rs[r],x-5,x+w+5);for(var q=0;ok&&q<r;q++)ok=free(rs[q],ax-3,ax+3);if(!ok)continue;
   at(txt,'x',x);at(txt,'y',ys[r]);at(ln,'y1',ys[r]+3);rs[r].push([x,x+w]);for(q=0;q<r;q++)rs[q].push([ax-2,ax+2]);kept.push(box(txt));return;}
  vis(g,false);});
 var names=[].map.call(svg.querySelectorAll('text.label'),function(t){var s=t.dataset.seq;vis(t,false);if(leaders[s])vis(leaders[s],false);return {t:t,bar:bars[s],ln:leaders[s]};})
  .filter(function(o){return o.bar&&!o.bar.hasAttribute('display');});
 names.sort(function(p,q){return p.bar.getAttribute('x')-q.bar.getAttribute('x');});var under={};
 names.forEach(function(o){var t=o.t,bx=+o.bar.getAttribute('x'),x0=Math.max(bx,X0),x1=Math.min(bx+ +o.bar.getAttribute('width'),X1),top=+o.bar.getAttribute('y'),bot=top+ +o.bar.getAttribute('height');
  if(!t.dataset.ink)t.dataset.ink=t.getAttribute('fill');t.textContent=t.dataset.full;t.classList.remove('below');at(t,'y',top+NAMEDY);at(t,'fill',t.dataset.ink);vis(t,true);var w=t.getComputedTextLength();
  var on=marks.filter(function(m){return m.top<bot&&top<m.bottom&&m.left<x1&&x0<m.right;}),starts=[x0+5].concat(on.map(function(m){return m.right+3;}));
  for(var i=0;i<starts.length;i++){if(starts[i]<x0+5||starts[i]+w+5>x1)continue;at(t,'x',starts[i]);var b=box(t);if(clear(b)){kept.push(b);return;}}
  var lane=laneOf(top),ys=(lanes[lane].dataset.nrows||'').split(' ').filter(Boolean).map(Number),rs=under[lane]||(under[lane]=ys.map(function(){return [];})),as=[];
  t.classList.add('below');at(t,'fill','#111');
  if(x1-x0<4)as.push((x0+x1)/2);else for(var a=x0+2;a<=x1-2;a+=4)as.push(a);
  for(var r=0;r<ys.length;r++)for(var k=0;k<as.length;k++){var ax=as[k],x=Math.max(Math.min(ax-6,W-6-w),X0),ok=free(rs[r],x-5,x+w+5);
   for(var q=0;ok&&q<r;q++)ok=free(rs[q],ax-3,ax+3);if(!ok)continue;
   at(t,'x',x);at(t,'y',ys[r]);var b=box(t);if(!clear(b))continue;
   rs[r].push([x,x+w]);for(q=0;q<r;q++)rs[q].push([ax-2,ax+2]);kept.push(b);
   o.ln=o.ln||(leaders[t.dataset.seq]=line('nleader',t.dataset.seq,t));at(o.ln,'x1',ax);at(o.ln,'x2',ax);at(o.ln,'y1',bot);at(o.ln,'y2',ys[r]-11);vis(o.ln,true);return;}
  vis(t,false);});
 svg.querySelectorAll('text.wspan').forEach(function(t){if(t.hasAttribute('display'))return;var r=box(t);
  if(r.right>W||!clear(r))vis(t,false);else kept.push(r);});}
function zoom(na,nb){a=na;b=Math.max(nb,na+1);var box=document.getElementById('selbox');if(box)at(box,'display','none');
 svg.querySelectorAll('[data-t]').forEach(function(el){var t=+el.dataset.t,u=el.dataset.u!==undefined?+el.dataset.u:t,x=X(t),y=X(u),inw=u>=a&&t<=b,c=el.classList;
  if(el.tagName==='rect'){at(el,'x',x);at(el,'width',Math.max(y-x,1.5));}
  else if(el.tagName==='path'){at(el,'transform','translate('+x+' '+el.getAttribute('transform').split(' ')[1]);}
  else if(c.contains('wait')||c.contains('waited')){var r=el.querySelector('rect'),l=el.querySelector('line');at(r,'x',x);at(r,'width',Math.max(y-x,1));at(l,'x1',x);at(l,'x2',y);}
  else if(c.contains('wspan')){at(el,'x',x+ +el.dataset.dx);}
  else if(c.contains('ann')){var l=el.querySelector('line');at(l,'x1',x);at(l,'x2',x);}
  vis(el,inw);});
 ticks();nudge();place();var x0=X0+a/span*(X1-X0);at(brush,'x',x0);at(brush,'width',Math.max(X0+b/span*(X1-X0)-x0,1));}
ov.addEventListener('mousedown',function(e){from=ovX(e);e.preventDefault();});
ov.addEventListener('mousemove',function(e){if(from===null)return;var x=ovX(e);at(brush,'x',Math.min(x,from));at(brush,'width',Math.abs(x-from));});
window.addEventListener('mouseup',function(e){if(from===null)return;var x=ovX(e),p=Math.min(x,from),q=Math.max(x,from);from=null;if(q-p<2)return;zoom(tOf(p),tOf(q));});
ov.addEventListener('dblclick',function(){zoom(0,span);});
})();
`)
