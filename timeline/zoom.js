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
